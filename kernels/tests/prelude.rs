//! The device maths that several kernels share lives once, in the CUDA prelude (`kernels/src/common.cuh`, issue #20),
//! with its host side in `kernels::maths`. This test reads every `.cu` file of `kernels/src` and fails on
//! - a definition of a function or struct that the prelude defines (a second `drift`, `bspline_weights`, ...);
//! - the prelude's maths written out again under another name: the cubic B-spline weight polynomials
//!   (3t^3 - 6t^2 + 4, -3t^3 + 3t^2 + 3t + 1, 1.5t^2 - 2t), the drift's limiting factor sqrt(1 + 2 v^2 tau) - 1, the
//!   Horner recurrence with derivatives of the radial functors (p2 = p2 r + p1; p1 = p1 r + ...);
//! - a radial functor's form compared against a number (`form == 1`) instead of the prelude's `RADIAL_*` defines.
//!
//! and every `.rs` file of `kernels/src` but `maths.rs` on the B-spline weight polynomials and on a radial form
//! mapped to a number by hand (`Form::Pade => 1`): `maths::Form::number` is the one numbering.
//!
//! Sources are compared as tokens with comments dropped and casts of literals taken off (`T(3)`, `(T)3`, `A(1.5)`,
//! `c(3.0)` and `3.0f` all read `3`), so spacing, names and precision spellings do not hide a copy. The checker's own
//! tests at the bottom plant copies and show they are caught.

use std::path::{Path, PathBuf};

#[test]
fn no_kernel_redefines_the_prelude_maths() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let prelude = std::fs::read_to_string(src.join("common.cuh")).unwrap();
    let names = prelude_names(&prelude);
    for must in ["bspline_weights", "radial_functor", "bspline_functor", "horner", "drift", "qmc_sincos", "qmc_round", "qmc_ipow", "warp_sum"] {
        assert!(names.iter().any(|n| n == must), "the prelude's names were not read ({must} missing): {names:?}");
    }
    let (mut cu, mut rs) = (vec![], vec![]);
    files(&src, &mut cu, &mut rs);
    assert!(cu.len() >= 10 && rs.len() > 50, "the walk found too little: {} .cu, {} .rs", cu.len(), rs.len());
    let mut problems = vec![];
    for f in &cu {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(&src).unwrap().display().to_string();
        problems.extend(cu_problems(&text, &names).into_iter().map(|p| format!("{rel}: {p}")));
    }
    for f in &rs {
        let rel = f.strip_prefix(&src).unwrap().display().to_string();
        if rel == "maths.rs" {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        problems.extend(rs_problems(&text).into_iter().map(|p| format!("{rel}: {p}")));
    }
    assert!(problems.is_empty(), "device maths defined outside the prelude (common.cuh) or kernels::maths:\n{}", problems.join("\n"));
}

fn files(dir: &Path, cu: &mut Vec<PathBuf>, rs: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, cu, rs);
        } else if path.extension().is_some_and(|e| e == "cu") {
            cu.push(path);
        } else if path.extension().is_some_and(|e| e == "rs") {
            rs.push(path);
        }
    }
}

// ------------------------------------------------------------------------------------------------------------------
// Tokens: identifiers, numbers (canonical: `3.0f` and `3.` read `3`), two-character operators, single punctuation;
// comments dropped, string literals kept whole, casts of literals taken off.

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Id(String),
    /// canonical value, and whether it was written as an integer (no point, exponent or suffix)
    Num(String, bool),
    Op(String),
}

/// Type names and helpers whose call or cast around a literal is only a change of precision.
const CASTS: &[&str] = &["T", "A", "S", "R", "E", "P", "K", "U", "float", "double", "c", "of"];

fn tokens(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            i += 2;
            while i < c.len() && !(c[i] == '*' && at(i + 1) == '/') {
                line += usize::from(c[i] == '\n');
                i += 1;
            }
            i += 2;
        } else if ch == '"' {
            let start = i;
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push((Tok::Op(c[start..i.min(c.len())].iter().collect()), line));
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Id(c[start..i].iter().collect()), line));
        } else if ch.is_ascii_digit() || (ch == '.' && at(i + 1).is_ascii_digit()) {
            let start = i;
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '.' || c[i] == '_') {
                // an exponent's sign belongs to the number
                if (c[i] == 'e' || c[i] == 'E') && (at(i + 1) == '-' || at(i + 1) == '+') && !c[start..i].iter().any(|d| *d == 'x') {
                    i += 1;
                }
                i += 1;
            }
            let text: String = c[start..i].iter().collect();
            let int = text.chars().all(|d| d.is_ascii_digit());
            out.push((Tok::Num(canonical(&text), int), line));
        } else {
            let two: String = [ch, at(i + 1)].iter().collect();
            if ["::", "==", "=>", "->", "<=", ">=", "!=", "&&", "||", "+=", "-=", "*=", "/="].contains(&two.as_str()) {
                out.push((Tok::Op(two), line));
                i += 2;
            } else {
                out.push((Tok::Op(ch.to_string()), line));
                i += 1;
            }
        }
    }
    uncast(out)
}

/// `3.0f`, `3.`, `3.0_f64` -> `3`; `0.50` -> `0.5`; integers and anything unparsed as written.
fn canonical(text: &str) -> String {
    let t = text.trim_end_matches("_f64").trim_end_matches("_f32").trim_end_matches(['f', 'F']);
    if t.starts_with("0x") {
        return text.to_string();
    }
    match t.parse::<f64>() {
        Ok(v) => format!("{v}"),
        Err(_) => text.to_string(),
    }
}

/// Take casts off literals: `T(3)`, `T::of(3)`, `(T)3`, `(T)-3` -> `3` / `-3`.
fn uncast(t: Vec<(Tok, usize)>) -> Vec<(Tok, usize)> {
    let is_cast = |x: &Tok| matches!(x, Tok::Id(s) if CASTS.contains(&s.as_str()));
    let op = |x: &Tok, s: &str| matches!(x, Tok::Op(o) if o == s);
    let mut out: Vec<(Tok, usize)> = Vec::with_capacity(t.len());
    let mut i = 0;
    while i < t.len() {
        // NAME ( [-] NUM )
        if is_cast(&t[i].0) && i + 3 < t.len() && op(&t[i + 1].0, "(") {
            let neg = op(&t[i + 2].0, "-");
            let k = i + 2 + usize::from(neg);
            if k + 1 < t.len() && matches!(t[k].0, Tok::Num(..)) && op(&t[k + 1].0, ")") {
                if neg {
                    out.push(t[i + 2].clone());
                }
                out.push(t[k].clone());
                i = k + 2;
                continue;
            }
        }
        // ( NAME ) [-] NUM
        if op(&t[i].0, "(") && i + 3 < t.len() && is_cast(&t[i + 1].0) && op(&t[i + 2].0, ")") {
            let k = i + 3 + usize::from(op(&t[i + 3].0, "-"));
            if k < t.len() && matches!(t[k].0, Tok::Num(..)) {
                i += 3;
                continue;
            }
        }
        // T :: of ( NUM ) is caught by `of ( NUM )` once `T ::` is dropped
        if is_cast(&t[i].0) && i + 2 < t.len() && op(&t[i + 1].0, "::") && matches!(&t[i + 2].0, Tok::Id(s) if s == "of") {
            i += 2;
            continue;
        }
        out.push(t[i].clone());
        i += 1;
    }
    out
}

// ------------------------------------------------------------------------------------------------------------------
// Patterns over tokens: `N:x` the number x, `Z` an integer literal, `I` any identifier, `I1`/`I2`.. identifiers that
// must be equal, else an operator or identifier as written.

fn matches_at(t: &[(Tok, usize)], i: usize, pat: &[&str]) -> bool {
    let mut bound: Vec<(String, String)> = vec![];
    for (k, p) in pat.iter().enumerate() {
        let Some((tok, _)) = t.get(i + k) else { return false };
        let ok = if let Some(n) = p.strip_prefix("N:") {
            matches!(tok, Tok::Num(v, _) if v == n)
        } else if *p == "Z" {
            matches!(tok, Tok::Num(_, true))
        } else if *p == "I" {
            matches!(tok, Tok::Id(_))
        } else if p.starts_with('I') && p[1..].chars().all(|d| d.is_ascii_digit()) {
            match tok {
                Tok::Id(s) => match bound.iter().find(|(v, _)| v == p) {
                    Some((_, w)) => w == s,
                    None => {
                        bound.push((p.to_string(), s.clone()));
                        true
                    }
                },
                _ => false,
            }
        } else {
            matches!(tok, Tok::Id(s) | Tok::Op(s) if s == p)
        };
        if !ok {
            return false;
        }
    }
    true
}

fn find(t: &[(Tok, usize)], pat: &[&str]) -> Vec<usize> {
    (0..t.len()).filter(|&i| matches_at(t, i, pat)).map(|i| t[i].1).collect()
}

/// The maths of the prelude, by what it computes: (what, pattern).
const SPLINE: &[(&str, &[&str])] = &[
    ("the B-spline weight 3t^3 - 6t^2 + 4", &["N:3", "*", "I", "-", "N:6", "*", "I", "+", "N:4"]),
    ("the B-spline weight -3t^3 + 3t^2 + 3t + 1", &["N:3", "*", "I", "+", "N:3", "*", "I", "+", "N:3", "*", "I", "+", "N:1"]),
    ("the B-spline weight derivative 1.5t^2 - 2t", &["N:1.5", "*", "I", "-", "N:2", "*", "I"]),
];
const DEVICE_ONLY: &[(&str, &[&str])] = &[
    ("the drift's limiting factor sqrt(1 + 2 v^2 tau) - 1", &["sqrt", "(", "N:1", "+", "N:2", "*", "I", ")", "-", "N:1"]),
    ("the radial functors' Horner recurrence with derivatives", &["I1", "=", "I1", "*", "I2", "+", "I3", ";", "I3", "=", "I3", "*", "I2", "+"]),
    ("a radial form compared with a number (use RADIAL_BSPLINE, RADIAL_CASINO, RADIAL_PADE)", &["form", "==", "Z"]),
];

/// Names of the functions and structs a source defines at file level.
fn prelude_names(prelude: &str) -> Vec<String> {
    let t = tokens(prelude);
    let mut names = vec![];
    let (mut i, mut depth) = (0, 0);
    while i < t.len() {
        match &t[i].0 {
            Tok::Op(o) if o == "{" => {
                depth += 1;
                i += 1;
            }
            Tok::Op(o) if o == "}" => {
                depth -= 1;
                i += 1;
            }
            // members of a struct (a view's `form`, `coef`) are its own, not the file's
            _ if depth > 0 => i += 1,
            Tok::Id(k) if k == "struct" => {
                if let Some((Tok::Id(n), _)) = t.get(i + 1) {
                    names.push(n.clone());
                }
                i += 2;
            }
            Tok::Id(k) if k == "__device__" || k == "__global__" => {
                // the declaration's name: the last identifier before its parameter list (template arguments skipped)
                let (mut j, mut name, mut depth) = (i + 1, None, 0);
                while j < t.len() {
                    match &t[j].0 {
                        Tok::Op(o) if o == "<" => depth += 1,
                        Tok::Op(o) if o == ">" => depth -= 1,
                        Tok::Op(o) if o == "(" && depth == 0 => break,
                        Tok::Id(s) if depth == 0 => name = Some(s.clone()),
                        _ => {}
                    }
                    j += 1;
                }
                if let Some(n) = name {
                    names.push(n);
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    names.sort();
    names.dedup();
    names
}

/// What a `.cu` file defines again or writes out again.
fn cu_problems(src: &str, names: &[String]) -> Vec<String> {
    let t = tokens(src);
    let mut out = vec![];
    // definitions: `__device__ ... NAME (` or `struct NAME`
    let defined = prelude_names(src);
    for n in defined.iter().filter(|n| names.contains(n)) {
        let line = t.iter().find(|(x, _)| *x == Tok::Id(n.clone())).map_or(0, |x| x.1);
        out.push(format!("line {line}: defines `{n}`, which the prelude defines"));
    }
    for (what, pat) in SPLINE.iter().chain(DEVICE_ONLY) {
        let mut lines = find(&t, pat);
        lines.dedup();
        out.extend(lines.into_iter().map(|l| format!("line {l}: {what}")));
    }
    out
}

/// What a `.rs` file writes out again: the spline polynomials, a radial form numbered by hand.
fn rs_problems(src: &str) -> Vec<String> {
    let t = tokens(src);
    let mut out = vec![];
    for (what, pat) in SPLINE {
        out.extend(find(&t, pat).into_iter().map(|l| format!("line {l}: {what} (use kernels::maths::bspline_weights)")));
    }
    let hand = find(&t, &["Form", "::", "I", "=>", "Z"]);
    out.extend(hand.into_iter().map(|l| format!("line {l}: a radial form numbered by hand (use Form::number)")));
    out
}

// ------------------------------------------------------------------------------------------------------------------
// The checker's own tests.

const PRELUDE: &str = "template <typename T> __device__ __forceinline__ T qmc_round(T x);\n\
template <> __device__ __forceinline__ float qmc_round<float>(float x) { return roundf(x); }\n\
__device__ __forceinline__ void drift(const double* v, double tau, double* out) { }\n\
template <typename T> struct BSplineTables { };\n";

#[test]
fn checker_reads_the_prelude_names() {
    assert_eq!(prelude_names(PRELUDE), vec!["BSplineTables", "drift", "qmc_round"]);
}

#[test]
fn checker_catches_a_redefinition_and_the_maths_under_other_names() {
    let names = prelude_names(PRELUDE);
    // a drift of its own, the spline weights in another precision spelling, a Horner loop, a numbered form
    let planted = "// a kernel\n\
__device__ void drift(const double v[3], double tau, double out[3]) { }\n\
template <typename A> __device__ void w(A t, A* a) {\n\
    const A t2 = t * t, t3 = t2 * t;\n\
    a[1] = ((A)3 * t3 - (A)6.0 * t2 + A(4)) * s;\n\
    a[2] = (-3.0f * t3 + 3.f * t2 + 3 * t + 1.0) * s;\n\
    a[3] = A(1.5) * t2 - A(2) * t;\n\
}\n\
__device__ double lim(double v2t) { return (sqrt(1.0 + 2.0 * v2t) - 1.0) / v2t; }\n\
__device__ void h(const double* c, int n, double r) { double p = 0, p1 = 0, p2 = 0;\n\
    for (int l = n - 1; l >= 0; l--) { p2 = p2 * r + p1; p1 = p1 * r + p; p = p * r + c[l]; } }\n\
__device__ int pade(const Radial& R) { return R.form == 2; }\n";
    let p = cu_problems(planted, &names);
    assert_eq!(p.len(), 7, "{p:#?}");
    for what in ["defines `drift`", "3t^3 - 6t^2 + 4", "-3t^3 + 3t^2 + 3t + 1", "1.5t^2 - 2t", "sqrt(1 + 2 v^2 tau)", "Horner", "compared with a number"] {
        assert!(p.iter().any(|m| m.contains(what)), "{what} not caught: {p:#?}");
    }
    assert!(p.iter().any(|m| m.starts_with("line 2: defines `drift`")), "{p:#?}");
    // calls of the prelude's functions, comments and the RADIAL_ defines are no copies
    let clean = "// a[1] = (3 * t3 - 6 * t2 + 4) * s\n\
__device__ void k(const double* g, double tau, double* d) { drift(g, tau, d); qmc_round(1.5); }\n\
__device__ bool b(const P& p) { return p.form == RADIAL_BSPLINE; }\n\
/* p2 = p2 * r + p1; p1 = p1 * r + p; */\n";
    assert!(cu_problems(clean, &names).is_empty(), "{:?}", cu_problems(clean, &names));
}

#[test]
fn checker_catches_rust_weights_and_hand_numbered_forms() {
    let planted = "pub fn weights(t: f64) -> [f64; 4] {\n\
    let c = |x: f64| T::of(x);\n\
    [u, (c(3.0) * t3 - c(6.0) * t2 + c(4.0)) * s, (T::of(-3.0) * t3 + 3.0 * t2 + 3.0 * t + 1.0) * s, 0.0]\n\
}\n\
fn form(f: Form) -> i32 { match f { Form::BSpline => 0, Form::Pade => 1, Form::Casino => 2 } }\n";
    let p = rs_problems(planted);
    assert_eq!(p.len(), 5, "{p:#?}");
    assert!(p[0].starts_with("line 3:") && p.iter().filter(|m| m.contains("by hand")).count() == 3, "{p:#?}");
    assert!(rs_problems("let n = f.form.number();\nmatch f { Form::BSpline => \"b\", Form::Pade => 25.0, _ => 6.0 }\n").is_empty());
}
