//! What a collective can carry: values that fit in a few 64-bit words.

use crate::error::Error;

/// Words per message payload: room for a `[f64; 8]`.
pub const WORDS: usize = 8;

/// A message payload on threads.
pub type Words = [u64; WORDS];

/// A value that can travel in a message: it encodes into at most [`WORDS`]
/// 64-bit words and decodes back exactly. Implemented for the integer and
/// float types, `bool`, `char`, `()`, pairs and arrays of them.
pub trait Wire: Copy + Send + 'static {
    /// How many words the value takes.
    const WORDS: usize;
    /// Writes the value into `out[..Self::WORDS]`.
    fn encode(&self, out: &mut [u64]);
    /// Reads a value written by [`Wire::encode`].
    fn decode(words: &[u64]) -> Self;
}

/// Encodes `value`, or says it is too large.
pub fn encode<T: Wire>(value: &T) -> Result<Words, Error> {
    if T::WORDS > WORDS {
        return Err(Error::PayloadTooLarge {
            words: T::WORDS,
            max: WORDS,
        });
    }
    let mut w = [0; WORDS];
    value.encode(&mut w);
    Ok(w)
}

macro_rules! int_wire {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            const WORDS: usize = 1;
            fn encode(&self, out: &mut [u64]) {
                out[0] = *self as u64;
            }
            fn decode(words: &[u64]) -> Self {
                words[0] as $t
            }
        }
    )*};
}
int_wire!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl Wire for f64 {
    const WORDS: usize = 1;
    fn encode(&self, out: &mut [u64]) {
        out[0] = self.to_bits();
    }
    fn decode(words: &[u64]) -> Self {
        f64::from_bits(words[0])
    }
}

impl Wire for f32 {
    const WORDS: usize = 1;
    fn encode(&self, out: &mut [u64]) {
        out[0] = self.to_bits() as u64;
    }
    fn decode(words: &[u64]) -> Self {
        f32::from_bits(words[0] as u32)
    }
}

impl Wire for bool {
    const WORDS: usize = 1;
    fn encode(&self, out: &mut [u64]) {
        out[0] = *self as u64;
    }
    fn decode(words: &[u64]) -> Self {
        words[0] != 0
    }
}

impl Wire for char {
    const WORDS: usize = 1;
    fn encode(&self, out: &mut [u64]) {
        out[0] = *self as u64;
    }
    fn decode(words: &[u64]) -> Self {
        char::from_u32(words[0] as u32).unwrap_or(char::REPLACEMENT_CHARACTER)
    }
}

impl Wire for () {
    const WORDS: usize = 0;
    fn encode(&self, _: &mut [u64]) {}
    fn decode(_: &[u64]) -> Self {}
}

impl<A: Wire, B: Wire> Wire for (A, B) {
    const WORDS: usize = A::WORDS + B::WORDS;
    fn encode(&self, out: &mut [u64]) {
        self.0.encode(&mut out[..A::WORDS]);
        self.1.encode(&mut out[A::WORDS..]);
    }
    fn decode(words: &[u64]) -> Self {
        (A::decode(&words[..A::WORDS]), B::decode(&words[A::WORDS..]))
    }
}

impl<T: Wire, const N: usize> Wire for [T; N] {
    const WORDS: usize = T::WORDS * N;
    fn encode(&self, out: &mut [u64]) {
        for (i, v) in self.iter().enumerate() {
            v.encode(&mut out[i * T::WORDS..]);
        }
    }
    fn decode(words: &[u64]) -> Self {
        std::array::from_fn(|i| T::decode(&words[i * T::WORDS..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Wire + PartialEq + std::fmt::Debug>(v: T) {
        let w = encode(&v).unwrap();
        assert_eq!(T::decode(&w), v);
    }

    #[test]
    fn values_survive_the_wire() {
        round_trip(-5i8);
        round_trip(u64::MAX);
        round_trip(-1.5f64);
        round_trip(f32::MIN_POSITIVE);
        round_trip(true);
        round_trip('ß');
        round_trip((3u16, -2.0f64));
        round_trip([1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        round_trip([[1u8, 2], [3, 4]]);
        assert!(encode(&[0u64; 9]).is_err());
    }
}
