//! Quadrature rules on the unit sphere (QMCPACK's `SphericalTensor`/`NonLocalECPComponent` set, from Lebedev's
//! octahedral rules and the icosahedron): points u_q and weights w_q with sum w_q = 1, so that
//! (1 / 4 pi) int f dOmega ~ sum_q w_q f(u_q), exactly for every polynomial of degree up to `degree()`.

use rand::Rng;

/// One of the supported rules, named by its number of points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Octahedron vertices: exact to degree 3.
    P6,
    /// Icosahedron vertices (QMCPACK's default): exact to degree 5.
    P12,
    /// Octahedron vertices and edge midpoints: exact to degree 5.
    P18,
    /// Octahedron vertices, edge midpoints and cube vertices (Lebedev): exact to degree 7.
    P26,
    /// Lebedev's 50-point rule: exact to degree 11.
    P50,
}

impl Rule {
    pub const ALL: [Rule; 5] = [Rule::P6, Rule::P12, Rule::P18, Rule::P26, Rule::P50];

    pub fn points(self) -> usize {
        match self {
            Rule::P6 => 6,
            Rule::P12 => 12,
            Rule::P18 => 18,
            Rule::P26 => 26,
            Rule::P50 => 50,
        }
    }

    /// Highest polynomial degree integrated exactly. The projection of an angular momentum l' component onto the
    /// channel l is exact while l + l' <= degree.
    pub fn degree(self) -> usize {
        match self {
            Rule::P6 => 3,
            Rule::P12 | Rule::P18 => 5,
            Rule::P26 => 7,
            Rule::P50 => 11,
        }
    }

    /// The points (unit vectors) and weights.
    pub fn nodes(self) -> (Vec<[f64; 3]>, Vec<f64>) {
        let mut pts = vec![];
        let mut wts = vec![];
        let mut add = |set: Vec<[f64; 3]>, w: f64| {
            wts.extend(std::iter::repeat_n(w, set.len()));
            pts.extend(set);
        };
        match self {
            Rule::P6 => add(orbit([1.0, 0.0, 0.0]), 1.0 / 6.0),
            Rule::P12 => {
                // (0, +-1, +-phi) and its cyclic permutations
                let phi = (1.0 + 5f64.sqrt()) / 2.0;
                let mut v = vec![];
                for s1 in [1.0, -1.0] {
                    for s2 in [1.0, -1.0] {
                        let p = [0.0, s1, s2 * phi];
                        v.push(p);
                        v.push([p[2], p[0], p[1]]);
                        v.push([p[1], p[2], p[0]]);
                    }
                }
                add(v.into_iter().map(normalise).collect(), 1.0 / 12.0)
            }
            Rule::P18 => {
                add(orbit([1.0, 0.0, 0.0]), 1.0 / 30.0);
                add(orbit([1.0, 1.0, 0.0]), 1.0 / 15.0);
            }
            Rule::P26 => {
                add(orbit([1.0, 0.0, 0.0]), 1.0 / 21.0);
                add(orbit([1.0, 1.0, 0.0]), 4.0 / 105.0);
                add(orbit([1.0, 1.0, 1.0]), 27.0 / 840.0);
            }
            Rule::P50 => {
                add(orbit([1.0, 0.0, 0.0]), 4.0 / 315.0);
                add(orbit([1.0, 1.0, 0.0]), 64.0 / 2835.0);
                add(orbit([1.0, 1.0, 1.0]), 27.0 / 1280.0);
                add(orbit([1.0, 1.0, 3.0]), 14641.0 / 725760.0);
            }
        }
        (pts, wts)
    }
}

impl std::str::FromStr for Rule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Rule::ALL.into_iter().find(|r| r.points().to_string() == s).ok_or_else(|| format!("unknown quadrature '{s}': expected 6, 12, 18, 26 or 50 points"))
    }
}

fn normalise(p: [f64; 3]) -> [f64; 3] {
    let n = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
    p.map(|x| x / n)
}

/// All distinct signed permutations of `p`, normalised: the orbit of p under the octahedral group.
fn orbit(p: [f64; 3]) -> Vec<[f64; 3]> {
    let perms = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    let mut out: Vec<[f64; 3]> = vec![];
    for perm in perms {
        for signs in 0..8 {
            let q: [f64; 3] = [0, 1, 2].map(|d| if signs >> d & 1 == 1 { -p[perm[d]] } else { p[perm[d]] });
            if !out.iter().any(|o| o.iter().zip(&q).all(|(a, b)| a == b)) {
                out.push(q);
            }
        }
    }
    out.into_iter().map(normalise).collect()
}

/// A uniformly distributed random rotation, row-major 3x3, from a random unit quaternion.
pub fn random_rotation(r: &mut impl Rng) -> [f64; 9] {
    let (mut q, mut n2) = ([0.0f64; 4], 0.0);
    // rejection sampling in the unit 4-ball gives a uniform direction on S^3
    while !(1e-6..=1.0).contains(&n2) {
        q = [(); 4].map(|_| r.random_range(-1.0..1.0));
        n2 = q.iter().map(|x| x * x).sum();
    }
    let [a, b, c, d] = q.map(|x| x / n2.sqrt());
    [
        a * a + b * b - c * c - d * d,
        2.0 * (b * c - a * d),
        2.0 * (b * d + a * c),
        2.0 * (b * c + a * d),
        a * a - b * b + c * c - d * d,
        2.0 * (c * d - a * b),
        2.0 * (b * d - a * c),
        2.0 * (c * d + a * b),
        a * a - b * b - c * c + d * d,
    ]
}

/// rot * u.
#[inline(always)]
pub fn rotate(rot: &[f64], u: [f64; 3]) -> [f64; 3] {
    [0, 1, 2].map(|i| rot[3 * i] * u[0] + rot[3 * i + 1] * u[1] + rot[3 * i + 2] * u[2])
}

/// Legendre polynomials P_0..P_3 at x.
#[inline(always)]
pub fn legendre(x: f64) -> [f64; 4] {
    [1.0, x, 0.5 * (3.0 * x * x - 1.0), 0.5 * (5.0 * x * x * x - 3.0 * x)]
}
