//! The one parser of every numeric command-line flag, so every command checks its numbers the
//! same way and says the same thing when one is wrong: the value as it was typed and the
//! allowed range, after clap's own `invalid value 'X' for '--flag <N>'` (the field). Every
//! numeric flag also sets `allow_negative_numbers`, so `--min-bytes -5` reaches the parser
//! ("out of range") instead of being read as an unknown flag.
//!
//! ```text
//! error: invalid value '0' for '--gpus <N>': 0 is out of range; allowed: 1 or more
//! error: invalid value '1e99' for '--tolerance <PCT>': 1e99 is out of range; allowed: 0 to below 100
//! ```

use crate::config::{ByteSize, parse_bytes};

/// The allowed range of a whole-number flag, in words: `1 or more`, `1 to 65535`.
fn int_range(min: u64, max: Option<u64>) -> String {
    match max {
        Some(max) => format!("{min} to {max}"),
        None => format!("{min} or more"),
    }
}

/// A whole number from `min` up to `max` (inclusive; `None`: as large as `T` holds).
pub fn int<T>(
    min: u64,
    max: Option<u64>,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Send + Sync + Clone + 'static,
{
    move |s: &str| {
        let typed = s.trim();
        let range = int_range(min, max);
        let n: i128 = typed
            .parse()
            .map_err(|_| format!("{typed} is not a whole number; allowed: {range}"))?;
        if n < i128::from(min) || max.is_some_and(|m| n > i128::from(m)) {
            return Err(format!("{typed} is out of range; allowed: {range}"));
        }
        u64::try_from(n)
            .ok()
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| {
                // Past what the flag's type holds (u32 for counts).
                let type_max = [u64::MAX, u64::from(u32::MAX), u64::from(u16::MAX)]
                    .into_iter()
                    .find(|&v| T::try_from(v).is_ok())
                    .unwrap_or(u64::from(u8::MAX));
                format!(
                    "{typed} is out of range; allowed: {}",
                    int_range(min, Some(type_max))
                )
            })
    }
}

/// A number from `min` (inclusive) up to `max`, inclusive or not.
pub fn float(
    min: f64,
    max: f64,
    max_inclusive: bool,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let typed = s.trim();
        let range = if max_inclusive {
            format!("{min} to {max}")
        } else {
            format!("{min} to below {max}")
        };
        let x: f64 = typed
            .parse()
            .map_err(|_| format!("{typed} is not a number; allowed: {range}"))?;
        let below_max = if max_inclusive { x <= max } else { x < max };
        if !x.is_finite() || x < min || !below_max {
            return Err(format!("{typed} is out of range; allowed: {range}"));
        }
        Ok(x)
    }
}

/// A size (`1K`, `1.5M`, `64MiB`, bytes) from `min` bytes up to `max`.
pub fn size(
    min: u64,
    max: Option<u64>,
) -> impl Fn(&str) -> Result<ByteSize, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let typed = s.trim();
        let range = match max {
            Some(max) => format!("{} to {}", ByteSize(min), ByteSize(max)),
            None => format!("{} or more", ByteSize(min)),
        };
        if typed.starts_with('-') {
            return Err(format!("{typed} is out of range; allowed: {range}"));
        }
        let n = parse_bytes(typed).map_err(|e| format!("{e}; allowed: {range}"))?;
        if n < min || max.is_some_and(|m| n > m) {
            return Err(format!("{typed} is out of range; allowed: {range}"));
        }
        Ok(ByteSize(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_name_the_value_and_the_range() {
        let gpus = int::<u32>(1, None);
        assert_eq!(gpus("8"), Ok(8));
        assert_eq!(
            gpus("0").unwrap_err(),
            "0 is out of range; allowed: 1 or more"
        );
        assert_eq!(
            gpus("-5").unwrap_err(),
            "-5 is out of range; allowed: 1 or more"
        );
        assert_eq!(
            gpus("x").unwrap_err(),
            "x is not a whole number; allowed: 1 or more"
        );
        assert_eq!(
            gpus("5000000000").unwrap_err(),
            "5000000000 is out of range; allowed: 1 to 4294967295"
        );
        let seed = int::<u64>(0, None);
        assert_eq!(seed("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(
            seed("-1").unwrap_err(),
            "-1 is out of range; allowed: 0 or more"
        );
        let port = int::<u16>(1, Some(65535));
        assert_eq!(
            port("70000").unwrap_err(),
            "70000 is out of range; allowed: 1 to 65535"
        );
    }

    #[test]
    fn numbers_echo_what_was_typed_not_a_hundred_digits() {
        let tolerance = float(0.0, 100.0, false);
        assert_eq!(tolerance("12.5"), Ok(12.5));
        assert_eq!(
            tolerance("1e99").unwrap_err(),
            "1e99 is out of range; allowed: 0 to below 100"
        );
        assert!(tolerance("100").is_err());
        assert!(tolerance("NaN").is_err());
        assert!(tolerance("-1").is_err());
        let fraction = float(0.0, 1.0, true);
        assert_eq!(fraction("1"), Ok(1.0));
        assert_eq!(
            fraction("-1").unwrap_err(),
            "-1 is out of range; allowed: 0 to 1"
        );
    }

    #[test]
    fn sizes_take_decimals_and_refuse_negatives() {
        let from = size(0, None);
        assert_eq!(from("1.5M"), Ok(ByteSize(3 << 19)));
        assert_eq!(
            from("-5").unwrap_err(),
            "-5 is out of range; allowed: 0 or more"
        );
        let msg = size(1, Some(64 << 20));
        assert_eq!(
            msg("1G").unwrap_err(),
            "1G is out of range; allowed: 1 to 64M"
        );
    }
}
