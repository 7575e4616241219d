//! Kubernetes resource quantities (`500m`, `2Gi`, `1.5`, `1e3`) as numbers, so resource
//! requests can be compared ("bigger") rather than only told apart.

/// Why a quantity cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum QuantityError {
    /// The text is not a number with a known suffix.
    #[error("{0:?} is not a Kubernetes quantity")]
    Invalid(String),
}

/// The multiplier of a quantity suffix.
fn multiplier(suffix: &str) -> Option<f64> {
    let binary = |power: i32| 1024_f64.powi(power);
    let decimal = |power: i32| 10_f64.powi(power);
    Some(match suffix {
        "" => 1.0,
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => return None,
    })
}

/// The value of a quantity in base units (cores, bytes).
pub(crate) fn parse_quantity(text: &str) -> Result<f64, QuantityError> {
    let invalid = || QuantityError::Invalid(text.to_owned());
    let trimmed = text.trim();
    // The number ends where the suffix starts; `e`/`E` followed by a digit or sign is an
    // exponent, a lone `E` is the exa suffix.
    let bytes = trimmed.as_bytes();
    let mut end = 0;
    while end < bytes.len() {
        let c = bytes[end];
        let exponent = (c == b'e' || c == b'E')
            && bytes
                .get(end + 1)
                .is_some_and(|n| n.is_ascii_digit() || *n == b'-' || *n == b'+');
        if c.is_ascii_digit() || c == b'.' || ((c == b'-' || c == b'+') && end == 0) {
            end += 1;
        } else if exponent {
            end += 2;
        } else {
            break;
        }
    }
    let (number, suffix) = trimmed.split_at(end);
    let value: f64 = number.parse().map_err(|_| invalid())?;
    let factor = multiplier(suffix).ok_or_else(invalid)?;
    let result = value * factor;
    if result.is_finite() {
        Ok(result)
    } else {
        Err(invalid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_and_exponents() {
        assert_eq!(parse_quantity("500m").unwrap(), 0.5);
        assert_eq!(parse_quantity("2").unwrap(), 2.0);
        assert_eq!(parse_quantity("1Gi").unwrap(), 1024.0 * 1024.0 * 1024.0);
        assert_eq!(parse_quantity("16G").unwrap(), 16e9);
        assert_eq!(parse_quantity("1e3").unwrap(), 1000.0);
        assert_eq!(parse_quantity("1.5Ki").unwrap(), 1536.0);
        assert_eq!(parse_quantity("2E").unwrap(), 2e18);
        assert!(parse_quantity("12Qi").is_err());
        assert!(parse_quantity("").is_err());
        assert!(parse_quantity("Gi").is_err());
    }
}
