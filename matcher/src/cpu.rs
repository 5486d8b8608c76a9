//! What this CPU offers the lookups: the implementations of the bucket
//! ANDs ([`Impl`]) and their detection, and a prefetch.
#![allow(unsafe_code)]

use std::sync::OnceLock;

/// Which implementation of the bucket ANDs a lookup uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Impl {
    /// 64-bit words: always available, always tested.
    Scalar,
    /// 256-bit vectors (x86-64 with AVX2).
    Avx2,
    /// 512-bit vectors (x86-64 with AVX-512F, BW and VL).
    Avx512,
}

impl Impl {
    /// All implementations.
    pub const ALL: [Impl; 3] = [Impl::Scalar, Impl::Avx2, Impl::Avx512];

    /// The name used by `MATCHER_IMPL` and `--impl`.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Scalar => "scalar",
            Impl::Avx2 => "avx2",
            Impl::Avx512 => "avx512",
        }
    }

    /// Parses a name (`scalar`, `avx2`, `avx512`).
    pub fn parse(s: &str) -> Result<Impl, String> {
        Impl::ALL
            .into_iter()
            .find(|i| i.name() == s)
            .ok_or_else(|| format!("unknown lookup implementation `{s}` (scalar, avx2, avx512)"))
    }

    /// Parses a name this CPU can run: an unknown name, or one it cannot
    /// run, is an error (a lookup asked for it would fall back to scalar
    /// code under the asked name).
    pub fn parse_supported(s: &str) -> Result<Impl, String> {
        let i = Impl::parse(s)?;
        if !i.supported() {
            return Err(format!("this CPU cannot run `{s}`"));
        }
        Ok(i)
    }

    /// Whether this CPU can run it.
    pub fn supported(self) -> bool {
        match self {
            Impl::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            // Every such CPU counts bits with `popcnt`, which the interval
            // tree's vector descents are compiled with.
            Impl::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
            #[cfg(target_arch = "x86_64")]
            // The classifier's narrow leaf groups use AVX2 beside it, and
            // its rows of 16-bit halves BW and VL (every AVX-512 CPU but
            // the Xeon Phi has them).
            Impl::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The implementations this CPU can run.
    pub fn available() -> Vec<Impl> {
        Impl::ALL.into_iter().filter(|i| i.supported()).collect()
    }

    /// The fastest implementation this CPU can run.
    pub fn detect() -> Impl {
        [Impl::Avx512, Impl::Avx2]
            .into_iter()
            .find(|i| i.supported())
            .unwrap_or(Impl::Scalar)
    }

    /// `MATCHER_IMPL` if set, else [`Impl::detect`]; an unknown name or one
    /// this CPU cannot run is an error.
    pub fn from_env() -> Result<Impl, String> {
        match std::env::var("MATCHER_IMPL") {
            Ok(s) if !s.is_empty() => {
                Impl::parse_supported(&s).map_err(|e| format!("MATCHER_IMPL: {e}"))
            }
            _ => Ok(Impl::detect()),
        }
    }

    /// The implementation lookups use unless told otherwise: `MATCHER_IMPL`
    /// (if valid here) or the fastest available, decided once per process.
    pub fn default_impl() -> Impl {
        static DEFAULT: OnceLock<Impl> = OnceLock::new();
        *DEFAULT.get_or_init(|| Impl::from_env().unwrap_or_else(|_| Impl::detect()))
    }
}

impl std::fmt::Display for Impl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Asks for the cache line at `p` ahead of its use; any address may be
/// passed (a prefetch never faults), so callers compute it with
/// `wrapping_add`.
#[inline(always)]
pub(crate) fn prefetch(p: *const u32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing into the program's
    // state and does not fault, whatever the address (SSE is part of
    // x86-64).
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impl_names() {
        for i in Impl::ALL {
            assert_eq!(Impl::parse(i.name()), Ok(i));
        }
        assert!(Impl::parse("sse").is_err());
        assert!(Impl::Scalar.supported());
        assert!(Impl::detect().supported());
    }
}
