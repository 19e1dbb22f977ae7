//! A congestion controller with a ceiling: quinn's Cubic, whose window never exceeds
//! `cap`. On a fast path (loopback, a LAN) Cubic's window grows far beyond the bytes the
//! receiver's socket buffer holds, so a burst sent while the receiving network thread
//! waits for a core overflows that buffer and the kernel drops datagrams: every drop
//! costs a retransmission and a congestion event, and drops of large datagrams make quinn
//! take the path for a black hole and fall back to 1,200-byte packets. With the window
//! at most what the receiver buffers, a sender never has more in flight than fits.

use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

use quinn::congestion::{Controller, ControllerFactory, ControllerMetrics, CubicConfig};

/// Builds [`Capped`] controllers.
#[derive(Debug)]
pub(super) struct CappedCubic {
    pub(super) cap: u64,
}

impl ControllerFactory for CappedCubic {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        let inner = Arc::new(CubicConfig::default()).build(now, current_mtu);
        Box::new(Capped {
            inner,
            cap: self.cap,
        })
    }
}

struct Capped {
    inner: Box<dyn Controller>,
    cap: u64,
}

impl Controller for Capped {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &quinn_proto::RttEstimator,
    ) {
        // At the ceiling the sender is held back by it, not by the network: the inner
        // window must not keep growing as if the path had room (quinn reports
        // `app_limited = false` while the window blocks), or a loss would cut it to a value
        // still above the ceiling and the sender would not slow down at all.
        let held = app_limited || self.inner.window() >= self.cap;
        self.inner.on_ack(now, sent, bytes, held, rtt);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.inner
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.inner
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        self.inner.window().min(self.cap)
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = self.inner.metrics();
        m.congestion_window = self.window();
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Capped {
            inner: self.inner.clone_box(),
            cap: self.cap,
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window().min(self.cap)
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_never_exceeds_the_cap() {
        let now = Instant::now();
        let uncapped = Arc::new(CubicConfig::default()).build(now, 1200);
        let small = uncapped.window() / 2;
        let mut c = Arc::new(CappedCubic { cap: small }).build(now, 1200);
        assert_eq!(c.window(), small);
        assert_eq!(c.initial_window(), small);
        // A larger MTU makes Cubic's own window larger; the ceiling stays.
        c.on_mtu_update(6500);
        assert_eq!(c.window(), small);
        assert_eq!(c.clone_box().window(), small);
        assert_eq!(c.metrics().congestion_window, small);
        let big = Arc::new(CappedCubic { cap: u64::MAX }).build(now, 1200);
        assert_eq!(big.window(), uncapped.window());
    }
}
