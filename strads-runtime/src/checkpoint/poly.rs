//! [`Poly`]: a checksum that composes over parts held apart.

/// A checksum of bytes that composes: the [`Poly`] of two byte strings one after the
/// other follows from each one's ([`Poly::then`]), so parts held by different ranks give
/// the checksum of the whole without coming together (a spread array's, in rank order).
/// A polynomial in the bytes, modulo 2^64: `h = h * B + b` for each byte (with `B` odd, a
/// change of one byte always changes it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Poly {
    /// The polynomial's value.
    pub h: u64,
    /// The number of bytes.
    pub len: u64,
}

impl Poly {
    const B: u64 = 0x0000_0100_0000_01b3;

    /// The checksum of no bytes.
    pub fn new() -> Poly {
        Poly { h: 0, len: 0 }
    }

    /// `B` to the powers 0 to 8.
    const POWERS: [u64; 9] = {
        let mut p = [1u64; 9];
        let mut k = 1;
        while k < 9 {
            p[k] = p[k - 1].wrapping_mul(Self::B);
            k += 1;
        }
        p
    };

    /// These bytes' checksum continued by `bytes`: eight bytes a step (`h B^8 + b0 B^7 +
    /// ... + b7`, the same value as byte by byte, with one dependent multiply a step).
    pub fn update(&mut self, bytes: &[u8]) {
        let p = &Self::POWERS;
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut t = 0u64;
            for (k, &b) in w.iter().enumerate() {
                t = t.wrapping_add(u64::from(b).wrapping_mul(p[7 - k]));
            }
            self.h = self.h.wrapping_mul(p[8]).wrapping_add(t);
        }
        for &b in words.remainder() {
            self.h = self.h.wrapping_mul(Self::B).wrapping_add(u64::from(b));
        }
        self.len += bytes.len() as u64;
    }

    /// `B` to the power `n`, modulo 2^64.
    fn power(mut n: u64) -> u64 {
        let (mut base, mut out) = (Self::B, 1u64);
        while n > 0 {
            if n & 1 == 1 {
                out = out.wrapping_mul(base);
            }
            base = base.wrapping_mul(base);
            n >>= 1;
        }
        out
    }

    /// The checksum of these bytes followed by `next`'s.
    pub fn then(self, next: Poly) -> Poly {
        Poly {
            h: self
                .h
                .wrapping_mul(Self::power(next.len))
                .wrapping_add(next.h),
            len: self.len + next.len,
        }
    }

    /// The checksum as one number (mixed with the length, so that near values differ in
    /// every bit).
    pub fn finish(self) -> u64 {
        let mut z = self.h ^ self.len.rotate_left(32);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::Poly;

    #[test]
    fn poly_checksums_compose_and_see_every_byte() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 37 % 251) as u8).collect();
        let of = |b: &[u8]| {
            let mut p = Poly::new();
            p.update(b);
            p
        };
        let whole = of(&bytes);
        // Eight bytes a step give the polynomial taken byte by byte.
        let by_byte = bytes.iter().fold(0u64, |h, &b| {
            h.wrapping_mul(0x0000_0100_0000_01b3)
                .wrapping_add(u64::from(b))
        });
        assert_eq!(whole.h, by_byte);
        for cut in [0, 1, 7, 500, 999, 1000] {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(of(a).then(of(b)), whole, "cut at {cut}");
        }
        // Three parts, one empty, composed in order.
        let three = of(&bytes[..300]).then(of(&[])).then(of(&bytes[300..]));
        assert_eq!(three.finish(), whole.finish());
        // Any one byte changed, and the order of two parts, change it.
        for at in [0, 1, 499, 999] {
            let mut c = bytes.clone();
            c[at] ^= 0x80;
            assert_ne!(of(&c).finish(), whole.finish(), "byte {at}");
        }
        assert_ne!(of(&bytes[500..]).then(of(&bytes[..500])), whole);
        // A trailing zero byte is seen too (the length is in the checksum).
        let mut z = bytes.clone();
        z.push(0);
        assert_ne!(of(&z).finish(), whole.finish());
    }
}
