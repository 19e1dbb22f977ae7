//! Skewed data: permuting ids so popular rows spread over partitions.
