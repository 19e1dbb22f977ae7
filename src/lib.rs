//! strads: write the serial training loop, get the parallel one.
