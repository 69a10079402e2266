//! Lattice VMC of the t-J model with a projected d-wave BCS (RVB) pair wavefunction: the LSU thesis (paper 001).
//!
//! Model. A tilted square cluster of N_S = L^2 + 1 sites (L odd), spanned by T1 = (L, 1) and T2 = (-1, L); site
//! (x, y) is index (L x + y) mod N_S, so its neighbours are s +- L and s +- 1. N_P = round(N_S (1 - x) / 2) pairs at
//! hole doping x. Gutzwiller-projected (no double occupancy) t-J Hamiltonian
//!
//!   H = - sum_<ij>,s t s_ij P (c+_is c_js + h.c.) P + J sum_<ij> (S_i.S_j - n_i n_j / 4),
//!
//! where s_ij = +-1 is the boundary twist (below). Wavefunction Psi(C) = det M, M_ab = phi(u_a, d_b) with u_a the
//! site of the up electron of pair a and d_b that of the down electron of pair b, and
//!
//!   phi(r) = (1/N_S) sum_k g_k cos(k.r),  g_k = D_k / (xi_k + sqrt(xi_k^2 + D_k^2)),
//!   xi_k = -2t (cos kx + cos ky) - mu,  D_k = (Delta/2)(cos kx - cos ky).
//!
//! Boundary twist (not in the thesis; the extract flags it). With periodic boundaries the d-wave node contains a
//! k-point where xi_k <= 0, so g_k is infinite (or 0/0). A twist along one of T1, T2 does not help at mu = 0: for
//! every odd L from 3 to 21 a k-point with D_k = 0 and xi_k <= 0 remains. Antiperiodic along both T1 and T2 leaves
//! no k-point on the node, for every odd L. The same twist is put in H (a hop across the boundary takes the sign
//! (-1)^(n1 + n2) of the cluster translations it crosses), so Psi is the projected ground state of a mean-field
//! Hamiltonian with the boundary of H. `Model::new` refuses any case where g_k is not finite and well-scaled.
//! phi is real and symmetric, so one table serves both spins (the thesis' transposed copy is the same table).
//!
//! Monte Carlo, as the thesis' GPU code: pick a pair and a spin uniformly, then a site uniformly among those not
//! holding that spin; a hole gives a hop, an opposite spin a swap of the two electrons. Accept when
//! u < |R|^2 (R = det M'/det M). A sweep is N_e = 2 N_P moves; in accumulation one energy measurement follows each
//! sweep. Local energy per site, E_loc = (E_kin + E_J) / N_S with E_kin = sum (-t s_ij) R_hop over electrons and
//! empty neighbours and E_J = -(J/2) sum over antiparallel bonds (1 + R_swap).
//!
//! The random numbers of each chain are one splitmix64 stream used in the same order by every variant (reference,
//! CPU, GPU), so the variants follow the same Markov chain and can be compared chain by chain.
//!
//! Precision: `double` (W = M^-1, phi, ratios in f64), `single` (all f32), `mixed`: above L = 9 (`screens_mixed`; on
//! the CPU from 2026-12-03, every size until 2026-12-04; on the GPU from 2026-12-05, `gpu::GpuEnsemble::screened`)
//! double's chain screened in f32 (`cpu::Screened`, below: W and every decision as double's, most ratios and the
//! measurement in f32 from W rounded to f32); up to L = 9 (and on the GPU at every size until 2026-12-05) paper 000's
//! scheme: W and phi stored in f32, the moves' ratios, f and g vectors, the
//! measurement's terms and the rank-1 updates of W evaluated in f32; the inverse rebuilt in f64). Energies are
//! accumulated in f64 in every mode. Until 2026-11 mixed did the updates in f64 from f32 data; until 2026-11-27 it
//! still took every dot product in f64 from f32 data (a conversion per W entry read and f64 FMAs, so its sweep cost
//! what double's did, on the GPU with twice the shared memory for the look-ahead batch's vectors), paying for accuracy
//! W does not have (an f32 W is off by eps_f32 / rcond, below).
//!
//! What single and mixed paid for, and what changed on 2026-11-27 (issue #26). Single and mixed rebuilt W before
//! every measurement (`recompute` 1; from 2026-11-27 every 3 sweeps up to L = 9, see below), 2 N_P^3 flops a sweep
//! that double never does; f32 pays for that only
//! where its sweep is much cheaper than double's, and on the CPU it was not: (1) the row loops (the f vectors, the
//! rank-1 updates, the rebuild's elimination) were plain loops that LLVM unrolls four vectors deep, so a row shorter
//! than 64 f32 (L = 9's 37, and 38 of L = 15's 102) ran in half-width and scalar remainder loops, while f64 rows lost
//! less; (2) the dot products summed into eight lanes, half an f32 vector; (3) mixed converted every W entry to f64;
//! (4) the rebuild's pivot search called a closure per entry and swapped rows entry by entry. Now W's rows are padded
//! to whole 64-byte vectors while a chain runs (`cpu::stride`), the row kernels hold a block of up to eight vectors
//! in registers while they run down the rows (`cpu::gemv_t`, `rank1`, `dots`, and `elim2` in the rebuild), f32 dots
//! use sixteen lanes, mixed evaluates in f32, and the rebuild leaves its column interchanges to the copy into W. f64
//! rounds exactly as before (same operations in the same order; padding adds exact zeros), so double still follows
//! the reference path. Tallies: one rebuild per chain sweep in single and mixed, none in double, no degenerate-swap
//! rebuilds in any (L = 9 and 15, 8 chains, 78 sweeps). Measured on this suite's 2-core development machine, chain
//! sweeps/s, before (the code of 134569b) -> after, CPU time of one thread (serial; 4 chains) and wall time of two
//! threads (8 chains), best of 20 runs of 5 sweeps each with a measurement:
//!
//! | | double | single | mixed |
//! |---|---|---|---|
//! | L = 9, serial | 40,806 -> 44,724 | 29,135 -> 35,935 | 24,484 -> 35,198 |
//! | L = 9, 2 threads | 75,015 -> 86,086 | 57,794 -> 70,318 | 46,354 -> 68,926 |
//! | L = 15, serial | 2,740 -> 2,519 | 3,355 -> 5,245 | 2,059 -> 4,306 |
//! | L = 15, 2 threads | 5,444 -> 6,660 | 6,032 -> 8,830 | 4,041 -> 6,308 |
//!
//! (double's serial L = 15 rate moved between 2,500 and 3,400 from build to build of the same f64 code: this
//! machine's cores are shared.) At L = 15 single and mixed now beat double (their sweep without the rebuild: 3.1x
//! double's); at L = 9 they reach 0.8x: the f32 sweep there is only 1.2x double's (short rows, and gathers and
//! reductions that cost the same in both), and the rebuild (6 us in f32, 8 us in f64, against a 22 us double sweep)
//! is the rest. The GPU kernel evaluates in S likewise (lattice.cu); its rebuild is the same extra cost.
//!
//! Recompute: every `recompute` sweeps (`cpu::Ensemble::recompute`, `gpu::GpuEnsemble::set_recompute`; 0: never,
//! as the thesis) W is rebuilt from scratch by Gauss-Jordan with partial pivoting in the arithmetic type (f64 in
//! double and mixed, f32 in single), the same algorithm on the CPU and the GPU; so is W after an accepted swap
//! whose two intermediate ratios are both below `degenerate_ratio` (a Sherman-Morrison step would divide by them).
//! Tally `RECOMPUTES` counts both. The sweep count restarts with every `run` (a launch on the GPU): a run whose
//! length is not a multiple of the interval leaves up to interval - 1 sweeps of drift to the next. The GPU kernel
//! factors 8 pivots at a time since 2026-11-28 (lattice.cu `Chain::reinvert`: one warp factors the panel's columns,
//! then the block applies its 8 steps to the rest of the matrix in one pass, 2 to 3 barriers a panel instead of 2 a
//! pivot): the same pivots and W bit for bit as the one-pivot Gauss-Jordan it replaced (scripts/cu-on-host.sh checks
//! it on the host against that algorithm without contraction; on the device both contract each x - m r into one
//! FMA). On the H100 (gpu-host.sh stages lattice and lattice-precision at df76c54, 2048 chains) single at L = 15 went
//! from 355k to 437k chain sweeps/s (1.07x double's 409k; 0.87x before), mixed from 266k to 295k; single without
//! rebuilds runs 29.5 ms a run against 42.2 ms with them, so the rebuild is now 30% of single's time (43% before).
//! Since 2026-12-01 the GPU's mixed chains hold W in f32 in shared memory with the first N_P / 2 rows of the f64
//! rebuild over it and the rest in device memory (gpu.rs `Placement::RebuildOffChip`): four chains an SM at L = 15
//! instead of two. On the H200 at 770d751 (2048 chains) mixed ran 381k chain sweeps/s at L = 15, 0.94x double's 403k
//! (0.72x at 6c9e622), and 2.96M at L = 9 (0.99x); without rebuilds 663k (1.64x double): the f64 rebuild, half of it
//! in device memory, is what keeps mixed below double at L = 15. From 2026-12-02 (e02327c, lattice.cu `gather_look`)
//! the look-ahead batch's phi gathers keep their loads in flight together (Nsight Compute had them at 21% of double's
//! stall samples at L = 15, 23% of single's at L = 9): H200, 2048 chains, interleaved against the build before, double
//! 2.99M -> 3.38M (L = 9) and 404k -> 486k (L = 15), single 3.51M -> 4.01M and 536k -> 594k, mixed 2.93M -> 3.29M and
//! 380k -> 402k. Double gained the most, so single is 1.18x / 1.22x double and mixed 0.97x / 0.83x; the rebuild (28%
//! of single's time at L = 15, 43% of mixed's) is what the precisions still pay.
//!
//! Rebuild interval of single and mixed (`default_recompute`, from 2026-11-27 to 2026-12-02; until then every sweep;
//! since then the residual check below up to L = 9): every 3 sweeps up to 37 pairs (L <= 9), every sweep above.
//! Measured on the CPU (this machine; accuracy does not depend on it) by kernels' ignored tests `drift_table` and
//! `interval_table` (their doc comments give the command lines): f32 chains (64, seed 21) rebuilt for 5 sweeps, then in
//! cycles of sweeps without a rebuild, sampled after each (s = sweeps since the rebuild; 384 samples a cell at L = 5,
//! 9, 11, 256 at L = 15, 1536 for s <= 2 at L = 15). W against the f64 inverse of the matrix the chain uses, normwise
//! error x rcond / eps_f32, median (max):
//!
//! | L (pairs) | s = 0 | 1 | 2 | 3 | 4 | 8 |
//! |---|---|---|---|---|---|---|
//! | 5 (12) single | 0.02 (0.1) | 0.30 (5.7) | 0.56 (8.4) | 0.72 (12) | 0.88 (11) | |
//! | 9 (37) single | 0.01 (< 0.05) | 0.44 (5.8) | 0.92 (12.5) | 1.30 (21) | 1.59 (20) | 2.32 (13) |
//! | 9 (37) mixed | 0.00 (< 0.05) | 0.34 (3.8) | 0.81 (24) | 1.14 (23) | 1.60 (20) | 2.13 (14) |
//! | 11 (55) single | 0.00 | 0.53 (26) | 0.96 (7.8) | 1.36 (17) | 1.86 (17) | |
//! | 11 (55) mixed | 0.00 | 0.41 (6.9) | 0.97 (18) | 1.40 (49) | 1.75 (29) | |
//! | 15 (102) single | 0.00 | 0.61 (16) | 1.21 (30) | 1.93 (24) | 2.57 (38) | 4.04 (77) |
//! | 15 (102) mixed | 0.00 | 0.46 (20) | 1.14 (39) | 1.61 (13) | 2.27 (24) | 3.73 (34) |
//!
//! It grows about as sqrt(s) (rounding errors of the updates adding up) and reaches the f32 level (W the exact inverse
//! of a matrix within eps_f32 of M: err x rcond = eps_f32) at s = 2 to 3 at every L. The energy a measurement takes
//! with that W against the same configuration's with the exact inverse, per site (local energy sigma 1.2e-2 at L = 9,
//! 2.3e-2 at L = 15): right after a rebuild mean 3e-7 to 1e-6 (L = 9), 2e-6 to 1e-5 (L = 15); after drift, mean / max:
//! L = 5 2e-6 / 7e-5 (s <= 4); L = 9 3e-5 / 1.3e-3 (s = 1), 5e-5 / 4.8e-3 (s = 2), 9e-5 / 4.3e-3 (s = 8), none above
//! 1e-2 in 6144 samples s = 1..8; L = 11 7e-5 / 2.6e-3 (s = 1) but 1.4e-4 / 1.5e-2 at s = 2 (mixed); L = 15 3e-4 to
//! 5e-2 / up to 80 (s = 1: a chain whose W went wrong), with 0.3 to 2% of the measurements above 1e-2 from s = 1 on.
//! The signed mean is zero within about two standard errors (L = 9: 1e-5, L = 15: 1e-4): the drift adds noise, no bias
//! was resolved. In the mean energy against double from the same starts (`interval_table`; z = difference over the
//! combined error bar, the mini-app's check takes z < 4): L = 9, 1024 chains, 10 + 40 sweeps, intervals 1, 2, 3, 4, 6,
//! 8 and never: every |z| <= 1.3 with error bars 1.9 to 2.0e-4 in all (double 2.0e-4), and with 2048 chains every |z| <
//! 1 with error bars 1.4e-4 as double's; L = 15, 256 chains, 5 + 20 sweeps: intervals 1 and 3 keep the error bar at 3.8
//! to 4.1e-4 (double 3.5e-4), but 2 (mixed) reached 1.3e-3, 4 (mixed) 9.7e-3 with the mean off by 1e-2, and 6 and 8 1.3
//! to 1.7e-3: outlier chains pass the check only by widening the error bar (intervals 1 and 3 happened to meet no
//! outlier there, 2 did: with outliers this rare, whether a run meets one is chance). So: at L <= 9 an interval of 3
//! measures at s = 0, 1, 2, where W stays within the f32 level (median below 1) and no energy error reaches the local
//! energy's spread; 3 also divides the mini-app's validation run (1 + 2 sweeps), which then ends on a rebuild and keeps
//! its strict inverse check (err x rcond below eps_f32), and it removes two thirds of the rebuilds (longer intervals
//! save at most a sixth of one more). At L = 11 one sweep of drift already makes energy errors above 1e-2, and at L =
//! 15 wrong inverses: every sweep there (untested sizes in between take it too). Kernels' test
//! `default_recompute_interval_keeps_w_at_the_f32_level` failed if the L = 9 interval left the f32 level (an interval
//! of 4 or more).
//!
//! Residual check (`residual_limit`, `default_residual_limit`, from 2026-12-02): after each sweep a chain computes
//! max_a |(M W)_aa - 1| (cpu.rs `residual_diag`; N_P^2 gathers and products in f64, a kinetic term's work per
//! electron) and rebuilds W when it exceeds the limit or is NaN. The diagonal sees a rank-1 update whose ratio was
//! off (in row a of the residual after an up electron's move, every row after a down electron's) and the rounding of
//! all the updates. Measured on the CPU (kernels' ignored tests `check_table` and `residual_table`, the command lines
//! in their docs), the check's value after s sweeps of f32 updates since a rebuild (64 chains x 4 cycles):
//!
//! | L | s = 0 | s = 1 | s = 6 | 0.99 quantile, s = 1..6 | largest |
//! |---|---|---|---|---|---|
//! | 9 single | 2e-5 | 5e-4 | 1.7e-3 | 1.1e-2 | 4.3e-2 |
//! | 9 mixed | 2e-6 | 5e-4 | 1.6e-3 | 1.0e-2 | 3.0e-2 |
//! | 15 single | 2e-4 | 1.4e-2 | 4.7e-2 (s = 6 of 32 chains) | 0.21 | 1.4 |
//! | 15 mixed | 8e-6 | 1.2e-2 | 4.8e-2 (idem) | 0.29 | 8.3 |
//!
//! At L = 15 the check's value after one sweep is already near 1e-2 (M's rcond ~ 1e-6 makes f32's residual eps_f32 /
//! rcond), and the measurements with energy errors above 1e-2 had values from 0.07 to 8: no limit separates them from
//! the normal drift. In the energy against double from the same starts (2048 chains, 10 + 60 sweeps; double's error bar
//! 7.8e-5), the limits 0.03, 0.05, 0.1, 0.2 rebuilt 34%, 23%, 13%, 6% of chain sweeps but widened the error bar in one
//! precision or both, up to 1.9e-4 (outlier chains), as did limits with a rebuild every 3 or 4 sweeps besides (up to
//! 9.9e-4); every 2 sweeps with 0.1 kept it (8.4e-5) but rebuilt 53%. Nor do the outliers come only from updates that
//! divide by a small ratio: a rebuild after any sweep with such an update (tried on the CPU, not kept) widened the
//! error bar at ratios below 0.1 (18% of chain sweeps rebuilt; mixed 9.5e-4) and kept it only at 0.3 (78% rebuilt). So
//! L = 15 keeps a rebuild every sweep. That does not remove the outliers either: from three seeds (`residual_table`
//! with LATTICE_SEEDS=3; 2048 chains, 10 + 60 sweeps) single's error bar with a rebuild every sweep was 7.7e-5, 1.1e-4
//! and 7.2e-4 against double's 7.8e-5, 7.9e-5 and 7.5e-5; mixed's (its rebuild in f64) 8.0e-5, 9.9e-5 and 7.8e-5; every
//! 2 sweeps with the limit 0.1 reached 1.0e-3 (single) and 2.9e-4 (mixed) at the second seed. An f32 chain at L = 15
//! can leave the distribution within a sweep, and the energy check (z below 4 over the combined error bar) passed such
//! a run by the wider bar (from 2026-12-02 the error-bar check below fails it). At L = 9 the limit 0.05 rebuilt 0.1% of
//! chain sweeps and gave double's energy with double's error bar: 2048 chains, 10 + 400 sweeps, double -0.505807 +-
//! 4.4e-5, single -0.505813 +- 4.4e-5 (z -0.10), mixed -0.505808 +- 4.4e-5 (z -0.03); a rebuild every sweep z 1.04 and
//! 1.47; the limit 0.01 rebuilt 2.4% (z 0.20, -0.99). So single and mixed up to 37 pairs rebuild on the check alone
//! (`CHECKED_MAX_PAIRS`), every sweep above. Kernels' test `default_rebuild_policy_checks_the_residual_up_to_l9` fails
//! if the check misses a W gone wrong, rebuilds normal drift, or moves the energy or its error bar. On the H200
//! (gpu-host.sh stage lattice-ab, 2048 chains, L = 9, interleaved against every 3 sweeps, means of two runs each):
//! single 4.02M -> 4.73M chain sweeps/s, mixed 3.23M -> 4.14M, double 3.41M either way: single 1.39x double, mixed
//! 1.22x (1.18x and 0.95x before). L = 15 is unchanged (single 1.23x, mixed 0.83x): there the rebuild every sweep is
//! still what the precisions pay.
//!
//! How an f32 chain leaves the distribution, and the check that sees it (2026-12-02). Kernels' ignored test
//! `outlier_trace` follows the farthest single chain of the seed above (chain 607): for 65 sweeps its measured energy
//! matches the exact local energy of its configuration to 3e-5 (rcond 1.8e-6 to 1.8e-5); after sweep 66 its
//! configuration has rcond 1.9e-10, near a node of Psi, and an exact local energy of +36.8 (-0.5 typical; its f32
//! measurement +86.8), and the next sweep leaves it. Double samples configurations with weight |det M|^2, and in 369k
//! double measurements at L = 15 (the table) no chain mean left the distribution (the move that took the chain
//! there is traced below). That one measurement among the chain's 60
//! holds most of the variance of 2048 chain means: the mean moved by 5.9e-4 from double's (8 of double's error bars)
//! while the error bar widened ninefold, z 0.8. The check (`chain_kurtosis`, `KURTOSIS_MAX`; the mini-app's `error bar
//! converged` over all chains and measurements) takes the kurtosis of the chain means, which tends to n x that chain's
//! share of the variance squared. Kernels' ignored test `outlier_table` at L = 15, 2048 chains:
//!
//! | sweeps | seed | double | single | mixed |
//! |---|---|---|---|---|
//! | 10 + 60 | 0 | 2.9 | 3.1 | 3.1 |
//! | 10 + 60 | 1 | 3.0 | 521 | 196 |
//! | 10 + 60 | 2 | 3.0 | 1997 | 3.1 |
//! | 4 + 26 | 0 to 3 | 3.3 at most | 3.9, 1021, 3.2, 7.9 | 108, 3.7, 3.2, 6.0 |
//!
//! So at the full suite's size (2048 chains, about 30 measured sweeps) one f32 run in four at L = 15 fails it, in
//! either precision: the rebuild every sweep does not prevent it (the move is taken within a sweep, on a ratio the f32
//! W cannot give to better than eps_f32 / rcond in absolute terms). Tried on the CPU and not kept: deciding again,
//! on W rebuilt from scratch, every move that would be accepted on an f32 ratio below 0.1 (0.14 more rebuilds a
//! chain sweep; for hops the new ratio taken in the arithmetic type from the rebuild's own inverse, so in f64 for
//! mixed) left the same chains out (10 + 60 sweeps, seeds 0 to 2: single 1212, 513, 1803, mixed 26, 245, 36).
//!
//! The move that takes a chain there (2026-12-03). `outlier_trace` runs chosen sweeps move by move and prints each
//! accepted move's ratio as the chain saw it, the exact ratio of the f32-rounded phi and that of the f64 phi. The
//! farthest chains of three runs (single seed 2 chain 607; mixed seed 1 chain 1979; mixed seed 0 chain 1726 in the
//! f64 run below) each took a swap to a configuration of rcond 1.9e-10, 1.1e-8 and 3.3e-9 at step 204, 199 and 203
//! of a sweep's 204, on a ratio the f32 W gave to 14% (2.35e-4 against the exact 2.73e-4; 7.00e-3 against 6.83e-3;
//! 2.31e-3 against 2.12e-3), and were measured there before another move was proposed: exact local energies +36.8,
//! -7.34, +44.8. A double chain taking that move on those random numbers measures the same. Past that measurement
//! the f32 chain goes wrong (at rcond below eps_f32 the sweep's rebuild leaves W wrong in f32, the next sweep's
//! ratios are off by up to 1e3 relative, and the chain accepts 38 and 41 moves against 8 to 20), but the mean has
//! already moved. Tried on the CPU, not kept: a chain that accepted a move of ratio below 0.05 rebuilt W in f64 and
//! ran as a double chain until W rounded to f32 passed the residual check at 0.05 (3.7% more rebuilds a chain
//! sweep): kurtosis single 3.4, 559, 1998, mixed 1875, 207, 3.0, the outliers unchanged. Nor is an absolute ratio
//! error of 1e-2 the cause: double with uniform noise of +-0.01 on every ratio gave 3.0, 2.9, 7.2; nor the f32-rounded
//! phi table (its ratios differ from the exact ones by up to 20% at rcond 1e-10): double on that table, W rebuilt
//! every sweep, gave 2.9, 3.0, 3.0 (both one-line changes of the CPU code, not kept). So the entry is decided right,
//! and what is not known is why f32 chains stand next to such configurations more often than double. Over seeds 0
//! to 10 (10 + 60 sweeps, `LATTICE_SEED_FROM`) double's kurtosis is 2.9 to 3.8 in every seed; mixed fails seed 1
//! only, but ranges 3.1 to 15.6 over seeds 3 to 10, a heavier tail than double's where it passes. Two rebuild
//! policies for mixed, tried and not kept: a rebuild (f64) after every accepted move (15.4 a chain sweep) passed seed
//! 1 (3.0; one seed, and any change of the path before the entry changes the outcome); a rebuild after every
//! accepted move of ratio below 0.3 (2.09 a chain sweep) passed seed 1 (2.9) but failed seeds 4 and 7 (542, 44.5)
//! of 3 to 10, so it is no better than the default. Left is the f32 ratio error itself, which grows as 1 / rcond on
//! the way; a change is judged only by its failure rate over many seeds against double's (issue #26).
//!
//! That rate at the suite's size, on the H200 (gpu-host.sh stage `lattice-seeds-gpu`, 2048 chains at L = 15, 3 + 6
//! sweeps a run with the suite's repetitions, GPU only, seeds 1 to 58, 2026-12-03 at 0d939e1): double fails the check
//! in 1 of 57 seeds (kurtosis 70; the others 2.9 to 7.7), single in 22 of 57 and mixed in 28 of 58 (medians 25 and
//! 21 against double's 3.2; largest 2046 and 2036). So f32 at L = 15 leaves the distribution in about 40 to 50% of
//! full-size runs against double's 2%, in both precisions; and double's own tail makes one run in about 50
//! unconverged, which the check rightly reports.
//!
//! The cause is the f32 decisions (2026-12-03, later). Kernels' ignored test `oracle_table` runs every f32 chain
//! beside a shadow f64 chain that takes the same moves (`cpu::Ensemble::run_oracle`), on the CPU at the suite's GPU
//! size (2048 chains, L = 15, 3 + 26 sweeps), where f32 alone fails the check in seeds 1, 2, 8 and 10 of 0 to 10
//! (single: 1016, 177, 40, 2040) and mixed in seed 0 of 0 to 5 (106). With every move decided by the shadow's f64
//! ratio, every seed passes (single, 0 to 10: 3.0 to 3.7; with all decisions in f64 the path is double's, farthest
//! chain included), and the f32 chains' own measurements give the shadow's kurtosis to 0.1: the f32 measurement is
//! not the cause. The f32 ratio decides otherwise than the f64 one in 1.2 moves a chain sweep of 204; a sweep's first
//! such move comes at 9e-5 a step right after the rebuild and about 1.5e-4 more a step with every f32 rank-1 update
//! since (3.5e-3 past 15 updates), so the updates in f32 carry most of the error, and it is the error of moves into
//! low-weight configurations that matters (exits are accepted whatever their error). Checking what f32 accepts is
//! enough: the f64 ratio confirms each move the f32 ratio accepts (16.0 a chain sweep; it rejects 0.43 of them), the
//! rest stay rejected: single, seeds 0 to 10, 2.9 to 3.4; mixed, 0 to 5, 2.8 to 3.1.
//!
//! A design from it, measured on the CPU (`oracle_table` with LATTICE_ORACLE_SCREEN=1, seeds 0 to 2): the chain's
//! state is the f64 W, updated only on moves its f64 ratio confirms; an f32 copy rounded from it after every accepted
//! move (N_P^2 conversions in place of an f32 update, and no rebuild) screens every proposal and measures. The f32
//! copy then accepts otherwise than f64 only 0.013 times a chain sweep, every seed passes (3.0, 3.0, 3.1, the
//! farthest chain double's own), and a run took 9.5 s on this 2-core machine against double's 17.3 s, single's 9.8 s
//! and mixed's 12.3 s (one run each): 1.8x double. Not yet done: moves the f32 copy rejects but f64 would accept are
//! not checked (a band of the f32 ratio's rounding bound, about (N_P + 2) eps_f32 sum_b |v_b W_bi|, would close it
//! for a few more f64 ratios, making the path double's exactly); and the design in `run_chain` and in lattice.cu,
//! where the f64 W and its f32 copy take 125 KB of shared memory a chain at L = 15 (issue #26).
//!
//! Mixed on the CPU is that design since 2026-12-03 (above L = 9 since 2026-12-04: `screens_mixed`), with the band
//! (`cpu::Screened`, `cpu::screen`): each proposal's
//! f32 ratio comes with a rigorous bound on its distance from the f64 ratio double computes (the f32 rounding of W and
//! phi and of each sum, by the usual forward error bound of a sum of products), and only a move whose sqrt(u) lies
//! above the f32 ratio plus the bound is rejected without an f64 ratio. So the chains take double's decisions, W bit
//! for bit, and the f32 ratios and measurements come from a W one rounding from double's (kernels' test
//! `screened_mixed_follows_double_exactly`). The bound is worst-case and the errors are not: kernels' ignored test
//! `screen_table` computes every proposal's f64 ratio too (seed 0, 3 + 6 sweeps). At L = 15 (2048 chains, 3.76M
//! proposals) |f32 ratio - f64 ratio| / bound has median 3.9e-3 and largest 0.13 over hops, 1.0e-4 and 1.6e-2 over
//! swaps, whose bound (median 1.0) carries W_ba times the bound of k = f . p's error, and that takes max |p| times
//! sum_b' |phi(y, d_b')| sum_a' |W_b'a'| for sum_a' |p_a'| sum_b' |phi(y, d_b')| |W_b'a'|; so 0.55 of the proposals
//! take an f64 ratio, 0.103 are accepted; with a tenth of the bound 0.215 would (3 proposals outside it, no decision
//! changed). At L = 9 (1024 chains, 0.68M proposals) the bound costs little: 0.173 take an f64 ratio, 0.146 are
//! accepted. Tried and not kept: the terms of k whose |p_a'| exceeds max |p| / 16 taken exactly (0.41 at L = 15), whose
//! strided column sums cost more than the f64 ratios they saved (mixed 4.5x slower than double). Measured on this
//! 2-core machine (64 chains, 3 + 6 sweeps, all cores, `qmcbench run lattice --variants cpu`, one run): chain sweeps/s
//! at L = 9 double 39.0k, single 78.6k, mixed 47.8k (1.22x double); at L = 15 double 4.19k, single 5.99k, mixed 3.67k
//! (0.88x): at L = 15 the exact path costs more f64 swap ratios (each a pass over W in f64) than the f32 ratios and
//! measurement save. On the H200 host's 16 cores (gpu-host.sh stage lattice-cpu at 6fa0a79, 2048 chains, records in
//! results/nvidia-h200) mixed runs 217k chain sweeps/s at L = 9 against double's 399k (0.55x) and 23.6k at L = 15
//! against 31.0k (0.76x): on cores with 64-byte vectors an f32 pass over rows of 37 (three vectors against five) saves
//! little, and every accepted move pays a conversion of W to f32 beside double's update. What it buys is the
//! distribution: stage lattice-seeds-cpu (seeds 1 to 21, 2048 chains, L = 15, 3 + 6 sweeps) has mixed's kurtosis within
//! 1% of double's at every seed, failing the check only where double does (seed 11: 70.3 and 71.0), where the GPU's
//! mixed, W updated in f32, failed 28 of 58 seeds. Since then the conversion is fused into the commit's last rank-1
//! update (`cpu::Mirror`), and from 2026-12-04 the swap's k term is sum_a' |p_a'| F_a' itself: the f vector's pass
//! over the f32 W computes F_a' beside f_a' (`cpu::fvec_with`; one more FMA per entry, on loads already made), which
//! also gives F_a of the f_a term without its strided walk down column a, and the row sums of |W| kept with the copy
//! are gone. `screen_table` then, seed 0, 3 + 6 sweeps: L = 15 (2048 chains) 0.199 of the proposals take an f64 ratio
//! (0.103 accepted; band median 8.6e-2 against an error median of 6.8e-5 over swaps, largest error / band 3.3e-2);
//! L = 9 (1024 chains) 0.151 (0.146 accepted). On the H200 host (gpu-host.sh stage lattice-cpu at 38accc3, 2048
//! chains, two runs, records in results/nvidia-h200) the suite's runs take an f64 ratio for 0.135 of the proposals at
//! L = 15 (0.224 before) and 0.121 at L = 9 (0.127); mixed runs 27.8k and 33.4k chain sweeps/s at L = 15 against
//! double's 29.3k and 33.3k (0.95x, 1.00x), and 309k and 320k at L = 9 against 438k and 493k (0.71x, 0.65x).
//! Interleaved against the old bound (stage lattice-cpu-ab, means of two runs each): L = 15 25.6k -> 26.6k, L = 9
//! 273k -> 295k. Those rates also rest on `cpu::sum_rows`' loop order (its docs): with the vectors' loop inside, LLVM
//! vectorised the f32 f vector across the vectors with gathers and scatters, and mixed ran 4.1k to 5.2k at L = 15 in
//! both builds of that call. Then (8c3343f) the commit's mirrored rank-1 update computes each new row whole before
//! storing it and its f32 copy: stored entry by entry, LLVM (unable to tell that the copy does not overlap the row)
//! kept that order, one scalar FMA, conversion and two scalar stores an entry, 14% of mixed's samples at L = 15 on this
//! machine. There (256 chains, 3 + 6 sweeps, interleaved, three runs each) mixed went from 5.93k-6.27k to 7.19k-7.37k
//! chain sweeps/s, double 6.0k-8.4k in the same runs. Profiled after it (perf with inlined frames, L = 15, 64 chains;
//! shares of the whole run, of which the chains' code took 72% in mixed and 68% in double), mixed's screen (its f32
//! pass with F) took 30%, its commits 21% (double's 16%: the copy), its measurement 12% (double's 17%) and its f64
//! ratios 6%, where double's swap ratios took 33%. Tried and not kept: a bound without F, from column sums of |W| kept
//! by the mirrored update, took 0.223 of the proposals to an f64 ratio against 0.134 and ran slower (6.80k-7.22k
//! against 7.04k-8.23k, interleaved). Left (issue #26): the design on the GPU.
//!
//! Where the precisions stand on the H200 host (stage lattice-cpu run twice at c937273, after 8c3343f and 0648b27;
//! 2048 chains, 16 cores, records in results/nvidia-h200), chain sweeps/s, the two runs: at L = 15 double 33.5k and
//! 34.0k, single 44.4k and 52.4k (1.32x, 1.54x double), mixed 36.6k and 43.2k (1.09x, 1.27x); at L = 9 double 534k
//! and 548k, single 647k and 597k (1.21x, 1.09x), mixed 577k and 614k (1.08x, 1.12x). So on the CPU single and mixed
//! now beat double at both sizes. The GPU in the same runs: L = 15 double 484k and 485k (14.2x the socket, 0.37 of
//! its floor), single 594k (1.23x), mixed 401k and 402k (0.83x); L = 9 double 3.43M and 3.39M, single 4.71M and 4.72M
//! (1.37x, 1.39x), mixed 4.35M and 4.37M (1.27x, 1.29x). At L = 15 the floor itself sets the bound: single's and
//! mixed's rebuild every sweep leaves their floor only 1.18x below double's (record field `floor_s`: 11.9 ms against
//! 14.0 ms a run), so 1.5x double there needs a sweep without the rebuild, which f32 W at that size cannot keep valid.
//! Nor does the CPU's screened design (below) reach it there, worked out from these records (2026-12-05, not built):
//! its state, double's f64 W (83 KB), does not share an SM's shared memory with its f32 copy (42 KB) and a second
//! chain, so it would live in device memory, where every accepted move updates it. A chain sweep at L = 15 makes 204
//! proposals, 18% of them hops (22 holes against 102 opposite spins), accepted at 18.1%, and 82% swaps at 5.06%
//! (records' `hop_acceptance`, `swap_acceptance`): 6.5 hops of about 250 KB of W traffic each (an f or g pass and a
//! rank-1 update that reads and writes W) and 8.5 swaps of about 415 KB (two updates and a g pass), 5.1 MB, and the
//! f64 f vectors of the confirmed swaps that are then rejected (the CPU confirms 13.5% of proposals, about 12 of
//! them rejected), 1 MB: about 6 MB a chain sweep. At the H200's measured copy rate (3.9 TB/s) that caps it at 650k
//! chain sweeps/s, 1.34x double's 484k before any of its f32 work, where 1.5x (727k) needs 4.4 TB/s; only L2 could
//! serve more, and the f64 W of the chains in flight (four an SM at single's footprint: 528 x 83 KB = 44 MB) would
//! fill the 50 MB L2 beside phi. It would still be worth building for mixed (0.83x double at L = 15 now).
//!
//! Built (2026-12-05, lattice.cu `run` with SCR, `gpu::GpuEnsemble::screened`; mixed above L = 9 on the GPU as on the
//! CPU): W in f64 in the chain's device buffer, its f32 copy on chip (67 KB a chain at L = 15: three an SM). Each batch
//! screens its moves in f32 from the copy; only where a swap is among the moves the bound does not reject does the
//! batch take double's f64 pass over W, and most batches do: the look-ahead already shares one pass among the batch's
//! moves, so the screen saves whole passes only, where the CPU saves one a proposal. The chains are double's (kernels'
//! test `gpu_screened_mixed_is_double_when_present`: W bit for bit at L = 9 and 15; 0.174 and 0.252 of the proposals
//! took an f64 ratio). H100, 2048 chains, L = 15: at 46466bd 256k chain sweeps/s against double's 485k (0.53x; W in
//! f32 it ran 0.83x); loading 8 rows of W ahead in its device-memory passes (01b15bf, interleaved with 46466bd) 301k
//! against 254k (0.62x); the batch's phi vectors rounded to f32 once instead of in every thread of the screen's pass
//! (3fea130, interleaved with 01b15bf) 336k against 301k (0.69x double's 485k). What it bought is the distribution:
//! over seeds 1 to 31 at the suite's size (stage lattice-seeds-screened, 46466bd) it fails the error-bar check at seed
//! 11 alone, where double fails too (kurtosis 71.9 against 70.3), every other seed within 2% of double's kurtosis,
//! where mixed with W in f32 failed 28 of 58.
//!
//! Its floor (the mini-app's record extras, from 2026-12-05): the updates, confirmations and rebuild in f64 at the
//! f64 FMA rate beside the rest at the f32 rate (`screened_f64_flops`), and the f32 copy's traffic on chip
//! (`screened_w_traffic`); the f64 W's device-memory traffic is the extra `w_device_s`, out of the floor, since the W
//! of the chains in flight fits in L2, whose bandwidth is not measured. Tried and not kept (2026-12-05): the chain's
//! vector, update and rebuild steps not inlined (`__noinline__`; run called each from up to six places, and Nsight
//! Compute had a quarter of single's stall samples at L = 9 waiting for an instruction fetch): ptxas's code for the
//! f32 entry fell from 9,920 to 8,608 instructions and the fetch stalls from 26% to 19%, but the calls put the chain's
//! struct and spills in local memory (long-scoreboard stalls 10% -> 27%, instructions executed +11%), and every
//! precision ran slower (H100, 2048 chains, interleaved: L = 9 double 3.40M -> 2.94M chain sweeps/s, single 4.71M ->
//! 3.94M, mixed 4.37M -> 4.04M; L = 15 double 484k -> 445k, single 594k -> 381k, screened mixed 338k -> 329k).
//! Kept (b1a9cb8, measured 2026-12-06): the rebuild alone out of line (lattice.cu `rebuild_out_of_line`), which takes
//! the chain's members by value and builds its own chain, so `run`'s chain keeps its address untaken and stays in
//! registers. Spill bytes (stores / loads) fell from 12 / 20 to none in single's 64-register entry and from 124 / 536
//! to 60 / 276 in mixed's, and the entries from 9,920 to 8,480 instructions (single) and 12,216 to 10,552 (double).
//! On the H200 (stage lattice-ab against b0949ba, P C C P, 2048 chains) every precision but mixed ran 1-3% faster, each
//! run above both of the other build's: L = 9 double 3.37M-3.41M -> 3.42M-3.45M, single 4.59M-4.65M -> 4.74M-4.75M;
//! L = 15 double 484k-485k -> 491k-492k, single 598k -> 604k-605k; mixed unchanged within the runs' spread (L = 9
//! 4.30M-4.35M, screened at L = 15 336k-339k). Mixed at L = 9 with 64 registers rose from 3.18M to 3.77M, still
//! below its 4.36M at 128, so it kept 128 there until 2026-12-07: with the rebuild's M_all slice read from shared
//! memory (lattice.cu `m_slice`, ab186cc) that entry spills 44 / 44 bytes instead of 60 / 272, and at 64 registers
//! with the rebuild off chip mixed ran single's speed (H100, 2048 chains, 3.88 / 3.92 ms a run against 4.19 to 4.27
//! at 128; `gpu::GpuEnsemble::default_layout`), which is now its default at L = 9.
//! Kept (7e75edc, measured 2026-12-06 on the H100, stage lattice-ab against b1a9cb8, P C C P, 2048 chains): the
//! gathers' rows of phi worked out once a move in warp 0's draw (lattice.cu `mv_gat`) instead of in every entry, and
//! the rank-1 updates in 2 blockDim / n groups of rows below 2 n threads (three at L = 9). Nsight Compute at L = 9:
//! instructions executed a launch -6.4% (double) and -4.0% (single), a warp's lanes active 0.66 -> 0.73 of 32. Yet at
//! L = 9 no precision ran faster (double 3.39M-3.40M -> 3.39M-3.44M, single 4.69M-4.70M -> 4.66M-4.68M, mixed
//! 4.29M-4.37M -> 4.28M-4.32M), while at L = 15 each run was above both of b1a9cb8's (double 489k-490k -> 491k-494k,
//! single 600k-603k -> 608k-611k, screened mixed 337k-338k -> 339k; there the gathers alone changed: 256 threads keep
//! two groups). At L = 9 the kernel is not bound by issue: the schedulers issue in half their cycles (0.50 warps a
//! cycle in single, 0.37 in double), and of single's stall samples 28% wait for an instruction fetch (its entry is
//! 8,512 instructions, 136 KB, and the 16 chains on an SM are at different points of the sweep), 18% on fixed-latency
//! dependences and 16% at barriers (double: 26% dependences, 18% fetch, 13% barriers). More chains (H100, 7e75edc;
//! 4224 / 6336 chains, whole waves) run every precision a little faster and leave the ratios as they are: L = 9 double
//! 3.55M / 3.65M, single 4.94M / 5.01M (1.39x, 1.37x), mixed 4.46M / 4.64M (1.26x, 1.27x); L = 15 double 506k / 512k,
//! single 629k / 637k (1.24x), screened mixed 350k / 354k. The CPU chains on the H100 host (16 cores, three runs of
//! 7e75edc, each against double in the same run): L = 9 single 0.95x, 0.97x and 0.98x double (411k-437k), mixed 1.07x,
//! 1.05x and 0.99x; L = 15 single 1.31x, 1.19x and 1.23x (double 26.6k-29.0k), mixed 1.10x, 1.19x and 1.05x. So on this
//! host single at L = 9 stays just below double, where the H200 host, the same Xeon model (family 6, model 207) and 16
//! cores, ran it 1.28x in both runs of b1a9cb8 that day, with double there at 333k-365k. Those runs are 3 + 6 sweeps,
//! about 40 ms a repetition at L = 9: too short on this host. gpu-host.sh lattice-cpu-precision (H100 host, 2026-12-06,
//! the CPU code of 9247968; 3 + 60 sweeps at L = 9, 3 + 12 at L = 15, five repetitions, each precision in a run of its
//! own, three rounds in rotated order) puts single above double at L = 9 in every round, 446k / 468k / 479k against
//! 366k / 427k / 397k (1.22x, 1.10x, 1.21x; every single run above every double run), mixed at 463k / 407k / 432k
//! (1.26x, 0.95x, 1.09x); at L = 15 single 38.1k / 36.2k / 36.9k (1.24x-1.34x, failing its error-bar check in every
//! run, as above) and mixed 36.3k / 29.7k / 33.1k (1.10x-1.18x) against double's 30.8k / 27.1k / 28.5k.
//!
//! Instruction fetch, the f32 entries' first stall at L = 9 (above), falls with their code (2026-12-07, H100, 2048
//! chains; scripts/ptxas-info.sh gives each entry's size, scripts/sass-hot.sh where its executed code lies): an
//! accepted move's Sherman-Morrison steps written once, in a loop (30cac41), a hop's ratio in one strided loop and the
//! measurement's gathers 4 in flight (8a3204a), the measurement's kinetic dots of both spins in one loop (83a9b6d) took
//! the f32 64-register entry from 133 to 99 KB. Interleaved, three builds (P A C C A P): single at L = 9 4.80M / 4.77M
//! (5dfe220) -> 5.15M / 5.15M (8a3204a) -> 5.26M / 5.26M (83a9b6d), mixed 4.72M / 4.74M -> 5.08M / 4.97M -> 5.08M /
//! 5.10M, double 3.46M / 3.46M -> 3.42M / 3.48M -> 3.47M / 3.54M: single 1.50x double, mixed 1.46x. At L = 15 double
//! 493k either side (8a3204a's 472k its outlier), single 593k-611k, screened mixed 338k-344k.
//!
//! W's memory known at compile time (c6537f5, 2026-12-07; lattice.cu `run`'s WOFF): W's pointer was shared memory or
//! the chain's device buffer as `p.on_chip` said at run time, and the tail of the block's shared memory was rounded
//! up through an integer, so the compiler knew W as neither: every access to it was a generic load or store with
//! 64-bit address arithmetic (226 generic loads in single's 64-register entry). With W's placement a compile-time
//! parameter (the off-chip entries a module of their own, gpu.rs `SRC_W_OFF_CHIP`, for sizes whose W does not fit on
//! chip) they are LDS / STS with 32-bit addresses; with it the chain's random state went to shared memory, and the f
//! vectors' pass over W is kept from unrolling. ptxas 13.0, sm_90: double's entry 153.9 -> 121.1 KB of code and 16 /
//! 28 -> 0 bytes of spills, single's 64-register entry 99.4 -> 96.1 KB, mixed's 118.1 -> 111.5 KB and 84 / 108 ->
//! 24 / 36. H100, 2048 chains, interleaved P A C C A P (P 83a9b6d, C c6537f5, A c6537f5 with the pass unrolled as the
//! compiler chose): L = 9 double 3.41M -> 4.01M / 3.99M (A 3.57M), single 5.16M -> 5.67M / 5.71M (A 5.16M-5.19M),
//! mixed 5.05M -> 5.55M / 5.64M (A 5.01M-5.07M); L = 15 double 492k -> 521k / 523k (A 516k-518k), single 593k ->
//! 622k / 627k (A 661k / 662k), screened mixed 342k-346k in all three. So at L = 9 the unrolled pass costs more in
//! instruction fetch than the shared-memory addressing gains, and at L = 15, where single's thread walks 102 rows, it
//! pays: 6f78931 unrolls it there alone, in single's batch pass where a thread walks more than 64 rows (mixed's
//! 64-register entry spilled with it compiled in). H100, P C C P (P c6537f5, C 6f78931): single at L = 15 621k / 624k
//! -> 660k / 661k, every other case within the runs' spread (L = 9 double 4.00M-4.04M, single 5.64M-5.70M, mixed
//! 5.60M-5.65M; L = 15 double 520k-524k, screened mixed 344k-348k). Double gained most (+17% at L = 9), so the ratios
//! fell: in 6f78931's records single runs 1.39x double at L = 9 and 1.26x at L = 15, mixed 1.38x at L = 9.
//!
//! Sums four moves a warp at once (2026-12-07, lattice.cu `ratio_sums`): the loads of four moves' dot products in
//! flight together, and their sums reduced over the warp in five shuffle rounds (two of them halving the values a lane
//! holds) instead of five rounds a move, one move after another. Used for the batch's ratios (2f8ccbe) and for the
//! measurement (5646367): its kinetic hops (a thread per electron walked each hop's N_P gathers from phi in turn
//! while the block waited) and exchange bonds (a warp per bond), with the list of down electrons made by warp 0's
//! ballots instead of thread 0 alone. H100, 2048 chains, interleaved P A C C A P (P b6220f6, the kernel of 6f78931; A
//! 2f8ccbe, the ratios alone; C 5646367, both), chain sweeps/s: L = 9 double 4.05M / 4.04M, 4.07M / 4.07M, 4.13M /
//! 4.07M; single 5.65M / 5.61M, 5.60M / 5.61M, 5.79M / 5.85M; mixed 5.63M / 5.61M, 5.74M / 5.69M, 5.88M / 5.91M;
//! L = 15 double 521k / 523k, 507k / 508k, 527k / 528k; single 657k / 659k, 637k / 640k, 652k / 655k; screened mixed
//! 346k / 347k, 330k / 333k, 334k / 334k. So four moves a warp in the ratios cost 3-4.5% at L = 15, where 8 warps take
//! one move each, and bought nothing in single at L = 9; the measurement's sums bought 2-5% at every size. ptxas 13.0,
//! sm_90, at C: single's 64-register entry 106.4 KB of code (98.4 at P), double's 131.2 (121.1). In C's records
//! single runs 1.43x double at L = 9 (5.82M against 4.08M) and mixed 1.44x; at L = 15 double 528k, 19.4x the socket
//! in the same run (27.1k), single 1.25x double.
//!
//! The batch's ratios a warp a move again where a warp has one move of the batch (L = 15: 8 warps), four a warp
//! where it has more (L = 9: 2 warps) and always in screened mixed (181270b); and the rebuild looking ahead (396c5dd,
//! lattice.cu `reinvert`): Nsight Compute at 65b0113 (H100, L = 15, single, a rebuild every sweep; scripts/sass-hot.sh
//! with BY=samples) put 31% of the entry's stall samples in the rebuild, 16.5% of them warps waiting at the barrier
//! while warp 0 factored a panel; now the other warps apply the panel before to the remaining columns meanwhile, W bit
//! for bit as before. H100, 2048 chains, interleaved, chain sweeps/s: 65b0113 (a warp a move everywhere) against
//! 5646367, P C C P: L = 9 double 3.97M / 3.90M against 4.07M / 4.03M, single 5.69M / 5.71M against 5.83M / 5.79M,
//! mixed 5.78M / 5.71M against 5.91M / 5.87M; L = 15 double 539k / 543k against 526k / 527k, single 672k / 676k
//! against 656k / 653k, screened mixed 351k / 352k against 334k / 332k. 396c5dd against 5646367, P C C P (another
//! call): L = 9 double 4.02M / 4.06M against 4.04M / 4.08M, single 5.70M / 5.72M against 5.83M / 5.80M, mixed 5.84M /
//! 5.81M against 5.93M / 5.96M; L = 15 double 542k / 544k against 526k / 529k, single 700k / 703k against 657k /
//! 653k, screened mixed 346k / 347k against 335k / 331k. So the look-ahead bought single about 4% at L = 15 over
//! 65b0113, while at L = 9 four moves a warp in the batch, beside the other path, no longer paid (its f32 64-register
//! entry 117.6 KB of code against 106.4 at 5646367). In 396c5dd's records single runs 1.40x double at L = 9 and 1.30x
//! at L = 15 (705k against 544k), mixed 1.44x at L = 9, and double at L = 15 19.9x the socket in the same run (27.3k).
//!
//! What the interval buys on the CPU (kernels' ignored test `cpu_rate_table`: best of 4 x 40 runs of 6 sweeps with a
//! measurement, 4 chains on one thread, 8 on two; this suite's 2-core development machine, shared with other builds,
//! so double's two-thread rate ranged 98,000 to 129,000 between runs), chain sweeps/s at L = 9, a rebuild every sweep
//! -> every 3: single 55,811 -> 69,356 on one thread and 108,368 -> 135,970 on two, mixed 55,761 -> 70,501 and
//! 105,993 -> 136,333, against double's 67,032 and 129,392: 0.83x -> 1.03 to 1.05x double. L = 15 keeps a rebuild
//! every sweep (one thread: double 4,015 to 4,349, single 6,557 to 6,859, mixed 5,501 to 6,235). Tried on the f32
//! sweep at L = 9 and measured no faster, so not kept: two sets of accumulators (even and odd rows) in the f vector's
//! pass over W, whose 3 FMA chains of 37 rows looked latency-bound, and four FMA chains in the up electrons' column
//! ratios. On the GPU the rank-1 updates now give the threads past N_P rows of their own (lattice.cu `update_cols`,
//! `update_rows`: at L = 15 with 256 threads, 204 threads of 51 rows each instead of 102 of 102), W bit for bit as
//! before (scripts/lattice-reinvert-host.cpp checks it).
//!
//! The kernel runs without a GPU too (from 2026-12-05): scripts/lattice-run-host.cpp runs lattice.cu's whole `run`
//! with a block of host threads a chain (scripts/cu-block-host.h) on launches a test writes (`gpu::host`, tests
//! `host_runs`), and CI (scripts/cu-on-host.sh) holds the chains it leaves to the reference path (double: L = 5 in
//! every placement, with the degenerate fallback and short windows, L = 9 at 64 and 128 threads, blocking factor 32,
//! the residual check, L = 15 with a rebuild), to the CPU's path (single and mixed at L = 5) and to their own state
//! (single and mixed at L = 9 and 15: W the inverse of the configuration's M, the measurement its local energy),
//! with the block's shared memory exactly gpu.rs's size between guards. Before, CI ran only the rebuild and the
//! updates of lattice.cu; the rest ran in the GPU tests, which return early where no GPU is.
//!
//! Validation of single and mixed: M is ill conditioned (rcond ~ 1e-4 at L = 9, 1e-6 at L = 15), so W in f32 is
//! off by ~ eps_f32 / rcond from the inverse of M (1e-1 at L = 15) even right after a rebuild, and ratios move by
//! more than the gap between u and |R|^2 at some move of most sweeps: f32 chains leave the f64 path within a few
//! sweeps (every chain at L = 15), which is expected and not an error. What must hold, and the mini-app and tests
//! check: the mean energy of the chains agrees with double within the combined error bars, and right after a
//! rebuild W matches the f64 inverse of the matrix the chain uses (phi rounded to f32) to the precision's level
//! (normwise error x rcond below eps_f32). The conditioning is M's own, not its scaling (2026-12-06, a scratch test
//! over 16 chains after 10 sweeps): Ruiz's equilibration of M's rows and columns (20 rounds) left rcond where it was,
//! 5e-5 to 3e-4 at L = 9 and 3e-6 to 2e-5 at L = 15, every row's largest entry within 10% of the others' (18.7 to
//! 20.6 at L = 9, 33 to 37 at L = 15): a rescaled M would keep an f32 W no closer to its inverse.

pub mod cpu;
pub mod gpu;
pub mod reference;

/// Site occupations (the thesis' latocc; BT never persists).
pub const DN: u32 = 0;
pub const UP: u32 = 1;
pub const HL: u32 = 2;

/// Entries of a chain's tally (all f64, summed over the run).
pub mod tally {
    pub const E_SUM: usize = 0;
    pub const E2_SUM: usize = 1;
    pub const MEASUREMENTS: usize = 2;
    pub const HOPS: usize = 3;
    pub const HOPS_ACCEPTED: usize = 4;
    pub const SWAPS: usize = 5;
    pub const SWAPS_ACCEPTED: usize = 6;
    /// Kinetic hop ratios evaluated in measurements.
    pub const KIN_RATIOS: usize = 7;
    /// Antiparallel bonds (swap ratios) evaluated in measurements.
    pub const BONDS: usize = 8;
    /// f vectors (N_P^2 each) computed in measurements.
    pub const FVECS: usize = 9;
    /// Inverses rebuilt from scratch (periodic recomputes and degenerate swaps), 2 N_P^3 flops each.
    pub const RECOMPUTES: usize = 10;
    /// Moves whose f64 ratio was computed to decide them in screened mixed precision (`cpu::Screened`): hops, swaps.
    pub const CONFIRMED_HOPS: usize = 11;
    pub const CONFIRMED_SWAPS: usize = 12;
    pub const LEN: usize = 13;
}

/// The physical problem: cluster, Hamiltonian, pair function.
#[derive(Clone, Debug)]
pub struct Model {
    pub l: usize,
    pub sites: usize,
    pub pairs: usize,
    pub t: f64,
    pub j: f64,
    /// Neighbours `[site][4]`: +x (s+L), -x, +y (s+1), -y.
    pub nbr: Vec<u32>,
    /// Hopping amplitude of each neighbour link, -t s_ij, `[site][4]`.
    pub hop: Vec<f64>,
    /// phi(i, j), `[i][j]`, symmetric.
    pub phi: Vec<f64>,
}

/// Variational and Hamiltonian parameters (Table 6.1 of the thesis by default).
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub doping: f64,
    pub t: f64,
    pub j: f64,
    pub delta: f64,
    pub mu: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params { doping: 0.1, t: 1.0, j: 0.3, delta: 1.5, mu: 0.0 }
    }
}

/// Pairs for a cluster of `sites` at hole doping `x` (N_e = 2 N_P rounded to the nearest even number).
pub fn pairs_for(sites: usize, x: f64) -> usize {
    (sites as f64 * (1.0 - x) / 2.0).round() as usize
}

/// A representative (x, y) of site s in the fundamental domain: 0 <= x, y < L, and (L, 0) for the last site.
pub fn coords(l: usize, s: usize) -> (i64, i64) {
    if s < l * l {
        ((s / l) as i64, (s % l) as i64)
    } else {
        (l as i64, 0)
    }
}

impl Model {
    /// Build the cluster and pair function, or say why the case is impossible.
    pub fn new(l: usize, p: Params) -> Result<Model, String> {
        if l < 3 || l % 2 == 0 {
            return Err(format!("L = {l} is not allowed: the tilted cluster needs an odd L of at least 3"));
        }
        if !(0.0..1.0).contains(&p.doping) {
            return Err(format!("doping {} must lie in [0, 1)", p.doping));
        }
        let n = l * l + 1;
        let pairs = pairs_for(n, p.doping);
        if pairs == 0 || 2 * pairs > n {
            return Err(format!("doping {} leaves {pairs} pairs on {n} sites", p.doping));
        }
        let (li, ni) = (l as i64, n as i64);
        let mut nbr = vec![0u32; n * 4];
        let mut hop = vec![0.0; n * 4];
        for s in 0..n {
            let (x, y) = coords(l, s);
            for (jn, (dx, dy)) in [(1i64, 0i64), (-1, 0), (0, 1), (0, -1)].into_iter().enumerate() {
                let j = (li * (x + dx) + (y + dy)).rem_euclid(ni) as usize;
                let (xj, yj) = coords(l, j);
                // The translation n1 T1 + n2 T2 between the neighbour's point and its representative.
                let (ex, ey) = (x + dx - xj, y + dy - yj);
                debug_assert_eq!((li * ex + ey) % ni, 0);
                let (n1, n2) = ((li * ex + ey) / ni, (li * ey - ex) / ni);
                nbr[s * 4 + jn] = j as u32;
                hop[s * 4 + jn] = if (n1 + n2).rem_euclid(2) == 1 { p.t } else { -p.t };
            }
        }
        // Twisted k-grid: k.T1 = 2 pi (m1 + 1/2), k.T2 = 2 pi (m2 + 1/2); m2 = 0, m1 = 0..N covers it (cyclic group).
        let tau = std::f64::consts::TAU;
        let mut ks = Vec::with_capacity(n);
        for m in 0..n {
            let a = m as f64 + 0.5;
            let (kx, ky) = (tau / n as f64 * (l as f64 * a - 0.5), tau / n as f64 * (a + 0.5 * l as f64));
            let xi = -2.0 * p.t * (kx.cos() + ky.cos()) - p.mu;
            let d = 0.5 * p.delta * (kx.cos() - ky.cos());
            let den = xi + (xi * xi + d * d).sqrt();
            let g = if d == 0.0 && xi > 0.0 { 0.0 } else { d / den };
            if !g.is_finite() || g.abs() > 1e8 {
                return Err(format!("the pair function is singular for L = {l}: k = ({kx:.3}, {ky:.3}) lies on the d-wave node inside the Fermi sea"));
            }
            ks.push((kx, ky, g));
        }
        let mut phi = vec![0.0; n * n];
        for i in 0..n {
            let (xi, yi) = coords(l, i);
            for j in 0..n {
                let (xj, yj) = coords(l, j);
                let (rx, ry) = ((xi - xj) as f64, (yi - yj) as f64);
                phi[i * n + j] = ks.iter().map(|&(kx, ky, g)| g * (kx * rx + ky * ry).cos()).sum::<f64>() / n as f64;
            }
        }
        Ok(Model { l, sites: n, pairs, t: p.t, j: p.j, nbr, hop, phi })
    }

    /// Nearest-neighbour bonds, each once: (s, s+L) and (s, s+1).
    pub fn bonds(&self) -> Vec<(usize, usize)> {
        (0..self.sites).flat_map(|s| [(s, self.nbr[4 * s] as usize), (s, self.nbr[4 * s + 2] as usize)]).collect()
    }

    #[inline(always)]
    pub fn phi(&self, i: usize, j: usize) -> f64 {
        self.phi[i * self.sites + j]
    }

    /// The pair matrix M_ab = phi(u_a, d_b), `[a][b]`.
    pub fn matrix(&self, c: &Config) -> Vec<f64> {
        let np = self.pairs;
        let mut m = vec![0.0; np * np];
        for a in 0..np {
            for b in 0..np {
                m[a * np + b] = self.phi(c.up[a] as usize, c.dn[b] as usize);
            }
        }
        m
    }
}

/// Where the electrons are: `up[a]`, `dn[b]` are the sites of pair a's up and pair b's down electron.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub up: Vec<u32>,
    pub dn: Vec<u32>,
}

impl Config {
    /// Occupation (DN, UP, HL) and the pair index of the electron on each site.
    pub fn occupation(&self, sites: usize) -> (Vec<u32>, Vec<u32>) {
        let mut occ = vec![HL; sites];
        let mut which = vec![0; sites];
        for (a, &s) in self.up.iter().enumerate() {
            occ[s as usize] = UP;
            which[s as usize] = a as u32;
        }
        for (b, &s) in self.dn.iter().enumerate() {
            occ[s as usize] = DN;
            which[s as usize] = b as u32;
        }
        (occ, which)
    }
}

/// The Markov chain's random numbers: splitmix64, the same on the host and in lattice.cu.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream(pub u64);

impl Stream {
    pub fn new(seed: u64, chain: u64) -> Stream {
        let mut s = Stream(seed ^ chain.wrapping_mul(0xD1B5_4A32_D192_ED03));
        s.next();
        s
    }
    #[inline(always)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform integer in 0..n (multiply-shift on the high 32 bits: exact, identical on the GPU).
    #[inline(always)]
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }
    /// Uniform in [0, 1) with 53 random bits.
    #[inline(always)]
    pub fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Gauss-Jordan inverse with partial pivoting (f64), with log|det|-free determinant sign and value. None if singular.
pub fn invert(m: &[f64], n: usize) -> Option<(Vec<f64>, f64)> {
    let mut a = m.to_vec();
    let mut inv: Vec<f64> = (0..n * n).map(|i| if i / n == i % n { 1.0 } else { 0.0 }).collect();
    let mut det = 1.0;
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| a[i * n + c].abs().total_cmp(&a[j * n + c].abs()))?;
        if a[p * n + c] == 0.0 {
            return None;
        }
        if p != c {
            for k in 0..n {
                a.swap(p * n + k, c * n + k);
                inv.swap(p * n + k, c * n + k);
            }
            det = -det;
        }
        let d = a[c * n + c];
        det *= d;
        for k in 0..n {
            a[c * n + k] /= d;
            inv[c * n + k] /= d;
        }
        for r in 0..n {
            let f = a[r * n + c];
            if r != c && f != 0.0 {
                for k in 0..n {
                    a[r * n + k] -= f * a[c * n + k];
                    inv[r * n + k] -= f * inv[c * n + k];
                }
            }
        }
    }
    Some((inv, det))
}

/// Below this magnitude of both intermediate ratios an accepted swap rebuilds W from scratch instead of two
/// Sherman-Morrison updates (which divide by them): 1e-6 in f64 arithmetic, 1e-3 in f32, where dividing by a
/// smaller ratio would amplify W's rounding (6e-8) beyond 1e-4. The ratios are evaluated in the storage type, so
/// mixed takes f32's value. gpu.rs passes the value to lattice.cu.
pub fn degenerate_ratio(eps: f64) -> f64 {
    if eps > 1e-10 {
        1e-3
    } else {
        1e-6
    }
}

/// Pairs up to which single and mixed rebuild W only when the residual check asks (`RESIDUAL_LIMIT`; L <= 9: 37
/// pairs at the default doping); above, every sweep (see the module docs' drift and residual tables).
pub const CHECKED_MAX_PAIRS: usize = 37;
/// Whether mixed precision runs double's chains screened in f32 (`cpu::Screened`, `gpu::GpuEnsemble::screened`; the GPU
/// from 2026-12-05) for `pairs` pairs:
/// above `CHECKED_MAX_PAIRS`, where f32 updates of W leave the distribution in about half the suite's runs whatever
/// the rebuild interval (module docs); up to it, W updated in f32 with the residual check, the GPU's scheme, which
/// keeps double's energy and error bar there. The screen does not pay at those sizes: it adds to every swap's f32
/// pass over W the absolute sums of its bound (twice the FMAs of a pass whose 37-entry rows are 3 f32 vectors against
/// f64's 5), and the f64 ratio and copy of every accepted move. On this suite's 2-core machine (L = 9, 512 chains,
/// chain sweeps/s, two runs of 70974b5 with the choice forced): screened 64k, W in f32 102k to 103k, double 94k to
/// 98k, single 98k to 106k. On the H200 host's 16 cores (stage lattice-cpu, 2048 chains, records of bc8e53b): W in
/// f32 383k and 405k against double's 355k and 376k in the same runs (1.08x; 254 rebuilds on the check over the
/// record's runs of 2048 chains), and interleaved with 70308ae's screened chains (stage lattice-cpu-ab) 464k and 386k
/// against 217k and 186k.
pub fn screens_mixed(pairs: usize) -> bool {
    pairs > CHECKED_MAX_PAIRS
}

/// The residual check's limit: after a sweep whose max_a |(M W)_aa - 1| exceeds it, W is rebuilt before the
/// measurement (cpu.rs `residual_diag`, lattice.cu the same). At L = 9 the check's value stays near 1e-3 for tens of
/// sweeps of f32 updates (0.99 quantile 1e-2 over the first 6, largest 4e-2): the limit lets that drift run, which
/// left the energy where a rebuild every sweep puts it (module docs), and catches a W gone wrong (0.3 and more).
pub const RESIDUAL_LIMIT: f64 = 0.05;

/// Default sweeps between rebuilds of W from scratch (0: never) for `pairs` pairs: never in double (storage in
/// f64: `double`) and in single and mixed up to `CHECKED_MAX_PAIRS` (they rebuild on the residual check), else
/// every sweep.
pub fn default_recompute(pairs: usize, double: bool) -> usize {
    usize::from(!double && pairs > CHECKED_MAX_PAIRS)
}

/// Default residual limit (0: no check) for `pairs` pairs: `RESIDUAL_LIMIT` in single and mixed up to
/// `CHECKED_MAX_PAIRS`, else none (double drifts by 1e-13; above, the rebuild every sweep).
pub fn default_residual_limit(pairs: usize, double: bool) -> f64 {
    if !double && pairs <= CHECKED_MAX_PAIRS {
        RESIDUAL_LIMIT
    } else {
        0.0
    }
}

/// Largest kurtosis of the chain means that a run's error bar passes with (`chain_kurtosis`): the error bar's own
/// relative uncertainty is sqrt((kurtosis - 1) / (4 n)) for n chains, and at 33 that is four times what normal chain
/// means (kurtosis 3) would give. Measured on double chains (kernels' ignored test `outlier_table`, largest over the
/// seeds): 2048 chains of 26 measurements (the full suite's size), 4 seeds: 3.7 (L = 5), 5.4 (9), 3.3 (15); of 60
/// measurements at L = 9, 3.5; 128 chains of 26 measurements, 50 seeds: 11.8, 16.6, 4.6. Few measurements a chain
/// leave the local energy's own tail in the chain means (a configuration near a node of Psi has a large local
/// energy, and double visits one now and then): with 4 measurements 2048 chains reached 1035 at L = 5 (one chain held
/// most of the variance) and 128 chains 115 at L = 9. Those error bars are not converged, and the check says so.
pub const KURTOSIS_MAX: f64 = 33.0;

/// The kurtosis of the chains' mean energies, n sum d^4 / (sum d^2)^2 with d a chain mean's deviation from their
/// mean, and the chain of the largest |d|: (kurtosis, chain). Chains without a measurement are left out; a
/// non-finite mean gives an infinite kurtosis; fewer than 2 measured chains, or all means equal, give kurtosis 0
/// (nothing to converge). The error bar over chains is converged when no chain holds a large share of the
/// variance; one chain whose measurements met an outlier (a local energy of +37 against -0.5) holds most of it, moves
/// the mean by its share and widens the error bar with it, so an energy check over error bars passes it. The
/// kurtosis sees it (it tends to n x that chain's share squared), where a fixed count of standard deviations does not
/// work: a chain's deviation is part of the standard deviation, so it is at most sqrt(n - 1) of them.
pub fn chain_kurtosis(tallies: &[[f64; tally::LEN]]) -> (f64, usize) {
    let means = chain_means(tallies);
    if let Some(&(i, _)) = means.iter().find(|(_, x)| !x.is_finite()) {
        return (f64::INFINITY, i);
    }
    if means.iter().all(|m| m.1 == means[0].1) {
        return (0.0, means.first().map_or(0, |m| m.0));
    }
    let n = means.len() as f64;
    let mean = means.iter().map(|m| m.1).sum::<f64>() / n;
    let (mut s2, mut s4, mut far) = (0.0, 0.0, (0.0, 0));
    for &(i, x) in &means {
        let d2 = (x - mean).powi(2);
        s2 += d2;
        s4 += d2 * d2;
        if d2 > far.0 {
            far = (d2, i);
        }
    }
    (n * s4 / (s2 * s2), far.1)
}

/// Each measured chain's mean local energy, (chain, mean); chains without a measurement are left out.
pub fn chain_means(tallies: &[[f64; tally::LEN]]) -> Vec<(usize, f64)> {
    tallies.iter().enumerate().filter(|(_, t)| t[tally::MEASUREMENTS] > 0.0).map(|(i, t)| (i, t[tally::E_SUM] / t[tally::MEASUREMENTS])).collect()
}

/// Energy mean and error bar over chains, the chain means taken as independent samples (the error bar is NaN below
/// two measured chains; `chain_kurtosis` says whether it converged).
pub fn energy_over_chains(tallies: &[[f64; tally::LEN]]) -> (f64, f64) {
    let means = chain_means(tallies);
    let n = means.len() as f64;
    let mean = means.iter().map(|m| m.1).sum::<f64>() / n;
    let var = if n > 1.0 { means.iter().map(|m| (m.1 - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { f64::NAN };
    (mean, (var / n).sqrt())
}

/// Smallest reciprocal condition number accepted for a starting configuration (Table 6.1's ConditionNumberMin).
pub const RCOND_MIN: f64 = 1e-7;
/// Most random configurations tried per chain (Table 6.1's nattemptmax).
pub const ATTEMPTS: usize = 1_000_000;

/// A chain's start: a random projected configuration whose M is well conditioned, and W = M^-1 (`[b][a]`).
pub fn initial_state(m: &Model, seed: u64, chain: u64) -> Result<(Config, Vec<f64>), String> {
    let mut r = Stream::new(seed ^ 0x1A77_1CE0, chain);
    let np = m.pairs;
    for _ in 0..ATTEMPTS {
        // Fisher-Yates shuffle of the sites: the first N_P get up electrons, the next N_P down electrons.
        let mut sites: Vec<u32> = (0..m.sites as u32).collect();
        for i in 0..2 * np {
            let j = i + r.below(m.sites - i);
            sites.swap(i, j);
        }
        let c = Config { up: sites[..np].to_vec(), dn: sites[np..2 * np].to_vec() };
        let mat = m.matrix(&c);
        if let Some((inv, _)) = invert(&mat, np) {
            if crate::linalg::rcond(&mat, &inv, np) >= RCOND_MIN {
                // inv is M^-1 with [row][col] = (M^-1)_{ba}: W[b][a] as the kernels index it.
                return Ok((c, inv));
            }
        }
    }
    Err(format!("no well-conditioned start found in {ATTEMPTS} attempts for chain {chain}"))
}

/// Starting states of `chains` chains (in parallel; each chain's start depends only on the seed and its index).
pub fn initial_states(m: &Model, seed: u64, chains: usize) -> Result<Vec<(Config, Vec<f64>)>, String> {
    use rayon::prelude::*;
    (0..chains as u64).into_par_iter().map(|c| initial_state(m, seed, c)).collect()
}

/// What a run of one chain leaves: its configuration, W, stream and tally.
#[derive(Clone, Debug)]
pub struct ChainResult {
    pub config: Config,
    pub w: Vec<f64>,
    pub tally: [f64; tally::LEN],
    /// The largest condition number (1-norm) of M at a measurement: the scale of the rounding error of that chain's
    /// energy (the reference computes it; fast variants leave NaN).
    pub cond_max: f64,
    /// The largest 1 / |r| of the Sherman-Morrison updates the chain made (r the ratio it divides by; a swap's first
    /// step through a nearly singular matrix makes it large): how much those updates amplified rounding errors in W
    /// (the reference computes it; fast variants leave NaN).
    pub growth_max: f64,
}

/// Flops of a run, from the tallies of all chains (the ratios and updates actually done).
pub fn flops(m: &Model, tallies: &[[f64; tally::LEN]]) -> f64 {
    let np = m.pairs as f64;
    let mut f = 0.0;
    for t in tallies {
        f += t[tally::HOPS] * 2.0 * np
            + t[tally::SWAPS] * (2.0 * np * np + 8.0 * np)
            + t[tally::HOPS_ACCEPTED] * 4.0 * np * np
            + t[tally::SWAPS_ACCEPTED] * 8.0 * np * np
            + t[tally::KIN_RATIOS] * 2.0 * np
            + t[tally::BONDS] * 4.0 * np
            + t[tally::FVECS] * 2.0 * np * np
            + t[tally::RECOMPUTES] * 2.0 * np * np * np
            + t[tally::CONFIRMED_HOPS] * 2.0 * np
            + t[tally::CONFIRMED_SWAPS] * (2.0 * np * np + 8.0 * np);
    }
    f
}

/// The part of [`flops`] a screened chain (`cpu::Screened`, `gpu::GpuEnsemble::screened`) does in f64: its rank-1
/// updates, rebuilds and confirmed ratios; the rest (every proposal's ratio and f vector, the measurement) is f32.
pub fn screened_f64_flops(m: &Model, tallies: &[[f64; tally::LEN]]) -> f64 {
    let np = m.pairs as f64;
    let mut f = 0.0;
    for t in tallies {
        f += t[tally::HOPS_ACCEPTED] * 4.0 * np * np
            + t[tally::SWAPS_ACCEPTED] * 8.0 * np * np
            + t[tally::RECOMPUTES] * 2.0 * np * np * np
            + t[tally::CONFIRMED_HOPS] * 2.0 * np
            + t[tally::CONFIRMED_SWAPS] * (2.0 * np * np + 8.0 * np);
    }
    f
}

/// Bytes of W the moves of a run read and write (`elem` bytes per entry), from its tallies: an accepted hop reads W
/// for its f or g vector and reads and writes it in its update (3 N_P^2), a swap reads it for f (N_P^2) and an
/// accepted one updates it twice with one more vector (5 N_P^2), each measurement f vector reads it (N_P^2), each
/// rebuild reads and writes it once per pivot (2 N_P^3). Where W lives on chip this is shared-memory traffic. A
/// screened chain's traffic is [`screened_w_traffic`]'s.
pub fn w_traffic(m: &Model, tallies: &[[f64; tally::LEN]], elem: usize) -> f64 {
    let n2 = (m.pairs * m.pairs) as f64;
    let per: f64 = tallies
        .iter()
        .map(|t| {
            3.0 * t[tally::HOPS_ACCEPTED] + t[tally::SWAPS] + 5.0 * t[tally::SWAPS_ACCEPTED] + t[tally::FVECS]
                + 2.0 * m.pairs as f64 * t[tally::RECOMPUTES]
        })
        .sum();
    per * n2 * elem as f64
}

/// Bytes a screened chain moves in each of its two copies of W, from its tallies: (the f32 copy: every swap's screen
/// and every measurement f vector read it, N_P^2 each, and each accepted move's last update writes it, N_P^2; the f64
/// W: each accepted move's updates and vectors as [`w_traffic`]'s, the confirmed swaps' f64 f vectors, one pass for
/// each `moves_per_pass` of them at the fewest (the GPU's look-ahead batch shares one pass among its moves, LOOK), and
/// each rebuild). On the GPU the copy lives on chip and W in device memory; the CPU keeps both in its caches.
pub fn screened_w_traffic(m: &Model, tallies: &[[f64; tally::LEN]], moves_per_pass: usize) -> (f64, f64) {
    let n2 = (m.pairs * m.pairs) as f64;
    let (mut copy, mut w) = (0.0, 0.0);
    for t in tallies {
        copy += t[tally::SWAPS] + t[tally::FVECS] + t[tally::HOPS_ACCEPTED] + t[tally::SWAPS_ACCEPTED];
        w += 3.0 * t[tally::HOPS_ACCEPTED] + 5.0 * t[tally::SWAPS_ACCEPTED] + t[tally::CONFIRMED_SWAPS] / moves_per_pass as f64
            + 2.0 * m.pairs as f64 * t[tally::RECOMPUTES];
    }
    (copy * n2 * 4.0, w * n2 * 8.0)
}

/// Fewest bytes a run moves: every sweep reads and writes each chain's W at least once.
pub fn bytes(m: &Model, chains: usize, sweeps: usize, elem: usize) -> f64 {
    (chains * sweeps * 2 * m.pairs * m.pairs * elem) as f64
}

#[cfg(test)]
mod tests;
