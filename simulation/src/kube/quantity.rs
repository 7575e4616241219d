//! Resource quantities in the canonical form a real API server stores them in: it rounds
//! a resource list up to milli-units (`SetDefaults_ResourceList` in
//! kubernetes/kubernetes `pkg/apis/core/v1/defaults.go`) and serializes a quantity in
//! canonical form (`Quantity.CanonicalizeBytes` in apimachinery's
//! `pkg/api/resource/quantity.go`): `0.5` is stored as `500m`, `1000` as `1k`, `2048Mi`
//! as `2Gi`, `1e3` stays `1e3`.

use serde_json::Value;

/// How a quantity was written, which decides how it is printed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `Ki`, `Mi`, ... suffixes.
    BinarySi,
    /// `m`, `k`, `M`, ... suffixes or none.
    DecimalSi,
    /// `e3`-style exponents.
    DecimalExponent,
}

/// The largest value (in milli-units) handled exactly; larger ones are left as written.
const LIMIT: i128 = 1 << 100;

/// A quantity's value in milli-units, rounded up, and its format; `None` when the text is
/// not a quantity this reads exactly (it is then left as written).
fn parse(text: &str) -> Option<(i128, Format)> {
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    let number_end = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let mantissa: i128 = digits.parse().ok()?;
    let mut exponent = -i32::try_from(fraction.len()).ok()?;
    let mut factor: i128 = 1;
    let format = match suffix {
        "" => Format::DecimalSi,
        "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => {
            exponent += match suffix {
                "n" => -9,
                "u" => -6,
                "m" => -3,
                "k" => 3,
                "M" => 6,
                "G" => 9,
                "T" => 12,
                "P" => 15,
                _ => 18,
            };
            Format::DecimalSi
        }
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let power = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                .iter()
                .position(|s| *s == suffix)?;
            factor = 1024_i128.pow(u32::try_from(power).ok()? + 1);
            Format::BinarySi
        }
        other => {
            let rest = other.strip_prefix(['e', 'E'])?;
            exponent += rest.parse::<i32>().ok()?;
            Format::DecimalExponent
        }
    };
    // Milli-units: value = mantissa * factor * 10^exponent; rounded up (away from zero).
    let scaled = exponent + 3;
    let base = mantissa.checked_mul(factor)?;
    let milli = if scaled >= 0 {
        base.checked_mul(10_i128.checked_pow(u32::try_from(scaled).ok()?)?)?
    } else {
        let divisor = 10_i128.checked_pow(u32::try_from(-scaled).ok()?)?;
        (base + divisor - 1) / divisor
    };
    (milli < LIMIT).then_some((sign * milli, format))
}

/// The canonical text of a quantity, or `None` when it is not one this reads exactly.
pub fn canonical_quantity(text: &str) -> Option<String> {
    let (milli, mut format) = parse(text)?;
    if milli == 0 {
        return Some("0".to_owned());
    }
    if format == Format::BinarySi && (milli.abs() < 1024 * 1000 || milli % 1000 != 0) {
        // Small or fractional binary values print as decimal ones (no rounding).
        format = Format::DecimalSi;
    }
    if format == Format::BinarySi {
        let mut value = milli / 1000;
        let mut power = 0;
        while power < 6 && value % 1024 == 0 {
            value /= 1024;
            power += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
        return Some(format!("{value}{suffix}"));
    }
    let mut mantissa = milli;
    let mut exponent = -3;
    while exponent < 18 && mantissa % 1000 == 0 {
        mantissa /= 1000;
        exponent += 3;
    }
    let suffix = match format {
        Format::DecimalExponent if exponent == 0 => String::new(),
        Format::DecimalExponent => format!("e{exponent}"),
        _ => match exponent {
            -3 => "m",
            0 => "",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            _ => "E",
        }
        .to_owned(),
    };
    Some(format!("{mantissa}{suffix}"))
}

/// Rewrites every quantity of a resource list (`{"cpu": "0.5"}`) in canonical form.
pub fn canonicalize_resource_list(list: &mut Value) {
    let Some(map) = list.as_object_mut() else {
        return;
    };
    for value in map.values_mut() {
        if let Some(canonical) = value.as_str().and_then(canonical_quantity) {
            *value = Value::String(canonical);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_print_as_a_real_server_stores_them() {
        for (written, stored) in [
            ("0.5", "500m"),
            ("500m", "500m"),
            ("1", "1"),
            ("1000m", "1"),
            ("1500m", "1500m"),
            ("1000", "1k"),
            ("1.5k", "1500"),
            ("2048Mi", "2Gi"),
            ("1536Mi", "1536Mi"),
            ("0.5Gi", "512Mi"),
            ("8Gi", "8Gi"),
            ("100M", "100M"),
            ("128G", "128G"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("0.0001", "1m"),
            ("512", "512"),
            ("0", "0"),
            ("0Gi", "0"),
            ("1073741824", "1073741824"),
        ] {
            assert_eq!(
                canonical_quantity(written).as_deref(),
                Some(stored),
                "{written}"
            );
        }
        assert_eq!(canonical_quantity("ten"), None);
        assert_eq!(canonical_quantity("1Zi"), None);
    }
}
