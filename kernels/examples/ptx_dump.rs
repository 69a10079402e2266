//! Write the PTX NVRTC makes of one module (for ptxas -v: registers and spills), e.g.
//! `cargo run --release -p kernels --example ptx_dump -- lattice out.ptx`.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let src = match a[1].as_str() {
        "lattice" => kernels::lattice::gpu::SRC,
        "solid" => kernels::solid::gpu::SRC,
        m => panic!("unknown module {m}"),
    };
    let ptx = kernels::gpu::compile(&a[1], src, kernels::gpu::arch_name(9, 0)).unwrap();
    std::fs::write(&a[2], ptx.to_src()).unwrap();
}
