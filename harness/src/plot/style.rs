//! How a series looks, by what it means: one hue per precision (or, where no precision varies, per variant or
//! algorithm) in every chart, one line style per variant (GPU solid, CPU dashed), one marker and shade per size
//! (smallest light, largest dark). The paper's numbers are always hollow markers on a dotted line.

use std::cmp::Ordering;

/// A colour, 0-255 per channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// Towards white by `a` in [0, 1] (a > 0), or towards black by -a (a < 0).
    pub fn shade(self, a: f64) -> Rgb {
        let (to, a) = if a >= 0.0 { (255.0, a.min(1.0)) } else { (0.0, (-a).min(1.0)) };
        let mix = |c: u8| (c as f64 + (to - c as f64) * a).round() as u8;
        Rgb(mix(self.0), mix(self.1), mix(self.2))
    }
}

pub const BLACK: Rgb = Rgb(0, 0, 0);
pub const INK: Rgb = Rgb(40, 40, 40);
pub const MUTED: Rgb = Rgb(90, 90, 90);
pub const GRID: Rgb = Rgb(225, 225, 225);
pub const FRAME: Rgb = Rgb(150, 150, 150);
/// The paper's numbers when they name no precision.
pub const PAPER: Rgb = Rgb(60, 60, 60);

/// Hues of the values that recur across charts: the same value is the same colour in every figure.
fn fixed_hue(value: &str) -> Option<Rgb> {
    Some(match value {
        "double" => Rgb(31, 119, 180),
        "single" => Rgb(230, 120, 0),
        "mixed" => Rgb(34, 150, 60),
        "gpu" => Rgb(120, 80, 180),
        "cpu" => Rgb(140, 86, 75),
        "cpu-ref" => Rgb(110, 110, 110),
        _ => return None,
    })
}

/// Hues for other values (algorithms, transports, ...), in the order of the values within a chart: chosen away from
/// the fixed hues so that no other value looks like a precision.
const OTHER_HUES: [Rgb; 6] = [Rgb(200, 40, 40), Rgb(210, 90, 170), Rgb(20, 160, 180), Rgb(150, 150, 20), Rgb(90, 90, 90), Rgb(70, 40, 140)];

/// The hue of `value`, the `rank`-th of its attribute's values in this chart.
pub fn hue(value: &str, rank: usize) -> Rgb {
    fixed_hue(value).unwrap_or(OTHER_HUES[rank % OTHER_HUES.len()])
}

/// Colours of stacked shares (kernel classes), fixed by name.
pub fn share_color(name: &str, rank: usize) -> Rgb {
    match name {
        "orbitals" => Rgb(31, 119, 180),
        "determinant" => Rgb(230, 120, 0),
        "jastrow" => Rgb(34, 150, 60),
        "coulomb" => Rgb(200, 40, 40),
        "pseudopotential" => Rgb(120, 80, 180),
        "branching" => Rgb(140, 86, 75),
        _ => OTHER_HUES[rank % OTHER_HUES.len()],
    }
}

/// Line styles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
}

/// The line style of a variant: GPU solid, CPU dashed, the reference dotted.
pub fn dash(value: &str, rank: usize) -> Dash {
    match value {
        "gpu" => Dash::Solid,
        "cpu" => Dash::Dashed,
        "cpu-ref" => Dash::Dotted,
        _ => [Dash::Solid, Dash::Dashed, Dash::Dotted][rank % 3],
    }
}

/// Marker shapes, one per size (by rank among a chart's sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
    Cross,
    Plus,
    Pentagon,
}

pub const MARKERS: [Marker; 8] =
    [Marker::Circle, Marker::Square, Marker::TriangleUp, Marker::Diamond, Marker::TriangleDown, Marker::Cross, Marker::Plus, Marker::Pentagon];

/// How one series (or one set of the paper's numbers) is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Look {
    pub color: Rgb,
    pub dash: Dash,
    pub marker: Marker,
    /// The paper's numbers: hollow markers.
    pub hollow: bool,
}

/// The shade of the `rank`-th of `n` sizes: the smallest half-way to white, the largest a quarter to black.
pub fn size_shade(color: Rgb, rank: usize, n: usize) -> Rgb {
    if n < 2 {
        return color;
    }
    let t = rank as f64 / (n - 1) as f64;
    color.shade(0.5 - 0.75 * t)
}

/// Order values as numbers where both are numbers, else as text (so "32" < "128" < "1024").
pub fn value_order(a: &str, b: &str) -> Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        _ => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precisions_keep_their_hue_whatever_their_rank() {
        assert_eq!(hue("double", 0), hue("double", 5));
        assert_ne!(hue("double", 0), hue("single", 0));
        // other values never take a precision's hue
        for r in 0..12 {
            for p in ["double", "single", "mixed", "gpu", "cpu"] {
                assert_ne!(hue("kahan-f32", r), hue(p, 0));
            }
        }
    }

    #[test]
    fn sizes_sort_as_numbers_and_shade_from_light_to_dark() {
        let mut v = vec!["1024", "128", "32", "512"];
        v.sort_by(|a, b| value_order(a, b));
        assert_eq!(v, ["32", "128", "512", "1024"]);
        let c = Rgb(100, 100, 100);
        let light = size_shade(c, 0, 4);
        let dark = size_shade(c, 3, 4);
        assert!(light.0 > c.0 && dark.0 < c.0, "{light:?} {dark:?}");
        assert_eq!(size_shade(c, 0, 1), c);
    }
}
