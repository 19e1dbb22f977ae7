//! A small linear congruential sequence, so that the files the cluster tests write are the
//! same in every run.

pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    /// The next number below `n`.
    pub(crate) fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}
