use super::*;
use crate::gpu::PointKernel;
use crate::Check;

/// The 38-electron gas's orbitals (19 per spin) in a cube of side 3.3, at points inside and outside the cell.
fn waves() -> (PlaneWaves, Vec<f64>) {
    let occ = occupied(19).unwrap();
    let pos = vec![0.1, 0.2, 0.3, 3.0, -0.7, 1.9, 5.2, 2.2, -4.1, 1.65, 1.65, 1.65, 0.0, 0.0, 0.0];
    (plane_waves(&occ, 3.3), pos)
}

#[test]
fn closed_shells_are_the_known_ones() {
    assert_eq!(closed_shells(171), vec![1, 7, 19, 27, 33, 57, 81, 93, 123, 147, 171]);
    assert_eq!(occupied(7).unwrap().len(), 7);
    assert_eq!(occupied(1).unwrap(), vec![[0, 0, 0]]);
    let e = occupied(8).unwrap_err();
    assert!(e.contains("16 electrons do not fill closed shells: use one of 2, 14, 38, 54, 66, 114, 162, 186, 246, 294, 342, ..."), "{e}");
    assert!(occupied(0).is_err());
    // past 342 the list names the shells around the request
    let e = occupied(200).unwrap_err();
    assert!(e.contains("400 electrons do not fill closed shells: use one of 2, 14,") && e.contains(", 342, ..., "), "{e}");
    let around: Vec<usize> = e.split(", 342, ..., ").nth(1).unwrap().trim_end_matches(", ...").split(", ").map(|n| n.parse().unwrap()).collect();
    assert!(around.len() == 2 && around[0] < 400 && around[1] > 400, "{e}");
    assert!(around.iter().all(|&n| occupied(n / 2).is_ok()), "{e}");
    // one orbital per occupied state: k = 0, then a cosine and a sine per +-n pair
    let (w, _) = waves();
    assert_eq!(w.len(), 19);
}

#[test]
fn cpu_matches_reference_in_both_layouts() {
    let (w, pos) = waves();
    let stride = 64;
    let reference = reference::evaluate(&w, &pos, stride);
    let mut out = vec![f64::NAN; reference.len()];
    w.evaluate::<f64>(&pos, stride, &mut out);
    let c = Check::compare("vgl", &out, &reference, 1e-13);
    assert!(c.passed(), "{c:?}");
    // padding entries are written, zero
    assert!(out.chunks_exact(stride).all(|row| row[w.len()..].iter().all(|&x| x == 0.0)));
    let mut o32 = vec![f32::NAN; reference.len()];
    w.evaluate::<f32>(&pos, stride, &mut o32);
    let c = Check::compare("vgl f32", &o32.iter().map(|&x| x as f64).collect::<Vec<_>>(), &reference, 1e-5);
    assert!(c.passed(), "{c:?}");
    // the qmc driver's layout holds the same numbers
    let n = w.len();
    let (mut v, mut g, mut l) = (vec![0.0; n], vec![0.0; 3 * n], vec![0.0; n]);
    w.vgl::<f64>([pos[3], pos[4], pos[5]], &mut v, &mut g, &mut l);
    let row = &out[5 * stride..10 * stride];
    for j in 0..n {
        assert_eq!([v[j], g[j], g[n + j], g[2 * n + j], l[j]], [row[j], row[stride + j], row[2 * stride + j], row[3 * stride + j], row[4 * stride + j]]);
    }
}

/// Every orbital is an eigenfunction of the Laplacian, and the gradient is the derivative of the value (central
/// differences): what makes the gas's kinetic energy constant.
#[test]
fn laplacian_is_minus_k2_and_gradient_is_the_derivative() {
    let (w, pos) = waves();
    let stride = 64;
    let h = 1e-5;
    for r in pos.chunks_exact(3) {
        let at = |d: usize, s: f64| {
            let mut p = [r[0], r[1], r[2]];
            p[d] += s;
            reference::evaluate(&w, &p, stride)
        };
        let o = reference::evaluate(&w, r, stride);
        for (j, &(k, _)) in w.k.iter().enumerate() {
            let k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
            assert!((o[4 * stride + j] + k2 * o[j]).abs() < 1e-12 * (1.0 + k2));
            for d in 0..3 {
                let fd = (at(d, h)[j] - at(d, -h)[j]) / (2.0 * h);
                assert!((fd - o[(1 + d) * stride + j]).abs() < 1e-6 * (1.0 + k2), "orbital {j} axis {d}: {fd} vs {}", o[(1 + d) * stride + j]);
            }
        }
    }
}

#[test]
fn reference_detects_a_wrong_kernel() {
    let (w, pos) = waves();
    let reference = reference::evaluate(&w, &pos, 64);
    let mut bad = w.clone();
    bad.k[5].0.iter_mut().for_each(|k| *k += 1e-6);
    let mut out = vec![0.0; reference.len()];
    bad.evaluate::<f64>(&pos, 64, &mut out);
    assert!(!Check::compare("vgl", &out, &reference, 1e-12).passed());
}

#[test]
fn gpu_matches_reference_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    // 57 orbitals per spin (114 electrons) in rows of 64; a second size past one row: 123 in rows of 128
    for count in [57, 123] {
        let w = plane_waves(&occupied(count).unwrap(), 4.1);
        let stride = count.next_multiple_of(64);
        let (_, pos) = waves();
        let reference = reference::evaluate(&w, &pos, stride);
        let mut g = gpu::GpuPlaneWaves::<f64>::new(&gpu, &w, stride, 8).unwrap();
        g.rows_mut().poison().unwrap();
        g.rows_mut().set_positions(&pos).unwrap();
        g.launch().unwrap();
        let c = Check::compare("vgl", &g.rows().outputs().unwrap(), &reference, 1e-13);
        assert!(c.passed(), "{c:?}");
        let mut g = gpu::GpuPlaneWaves::<f32>::new(&gpu, &w, stride, 8).unwrap();
        g.rows_mut().poison().unwrap();
        g.rows_mut().set_positions(&pos).unwrap();
        g.launch().unwrap();
        let out: Vec<f64> = g.rows().outputs().unwrap().iter().map(|&x| x as f64).collect();
        let c = Check::compare("vgl f32", &out, &reference, 1e-5);
        assert!(c.passed(), "{c:?}");
    }
}

/// For scripts/cu-on-host.sh: the k vectors (planewave.cu's packing), points inside and outside the cell, and the CPU
/// evaluation in f64 and f32 (`[point][5][stride]`), which planewave.cu compiled for the host must reproduce. Cases of
/// one row (57 orbitals in 64) and of two (123 in 128). Writes to $PLANEWAVE_DUMP; does nothing without it.
#[test]
#[ignore]
fn dump_for_the_host_build() {
    let Ok(dir) = std::env::var("PLANEWAVE_DUMP") else { return };
    let dir = std::path::PathBuf::from(dir);
    let (_, pos) = waves();
    let mut lines = Vec::new();
    for (i, count) in [57usize, 123].into_iter().enumerate() {
        let w = plane_waves(&occupied(count).unwrap(), 4.1);
        let stride = count.next_multiple_of(64);
        let (mut o64, mut o32) = (vec![0.0f64; pos.len() / 3 * 5 * stride], vec![0.0f32; pos.len() / 3 * 5 * stride]);
        w.evaluate::<f64>(&pos, stride, &mut o64);
        w.evaluate::<f32>(&pos, stride, &mut o32);
        let bytes = |v: &[f64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        std::fs::write(dir.join(format!("k-{i}.bin")), bytes(&w.packed())).unwrap();
        std::fs::write(dir.join(format!("pos-{i}.bin")), bytes(&pos)).unwrap();
        std::fs::write(dir.join(format!("f64-{i}.bin")), bytes(&o64)).unwrap();
        std::fs::write(dir.join(format!("f32-{i}.bin")), o32.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        lines.push(format!("{} {stride} {}", w.len(), pos.len() / 3));
    }
    std::fs::write(dir.join("cases.txt"), lines.join("\n") + "\n").unwrap();
}
