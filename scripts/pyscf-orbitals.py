#!/usr/bin/env python3
"""Restricted Hartree-Fock of the Be atom (1s^2 2s^2) with PySCF, written as the plain-text orbital file that the
`atomic` kernel (and through it the `qmc` driver) includes at compile time (kernels/src/atomic/data/be-hf.txt), so the Rust build needs no Python.

Run:  python3 -m venv /tmp/venv-pyscf && /tmp/venv-pyscf/bin/pip install pyscf==2.14.0
      /tmp/venv-pyscf/bin/python scripts/pyscf-orbitals.py > kernels/src/atomic/data/be-hf.txt

Basis: cc-pVTZ, all-electron. Its RHF energy (-14.572875 Ha) is 0.15 mHa above the Hartree-Fock limit
(-14.573023 Ha); cc-pVQZ (-14.572971) and cc-pV5Z (-14.573014) gain less than the DMC error bars the driver reaches,
at two to four times the functions. The occupied orbitals of closed-shell 1s^2 2s^2 are spherical, so their p and f
coefficients vanish by symmetry (checked below to 1e-10) and those shells are left out. The Cartesian d shells stay:
xx + yy + zz = r^2 is an s-type function, and the orbitals use it (coefficients up to 7e-4).

Each shell is written as angular momentum l, exponents b and coefficients a such that its Cartesian functions
x^i y^j z^k sum a exp(-b r^2) (in the order xx, xy, xz, yy, yz, zz for d) are exactly PySCF's atomic orbitals
(primitive and contraction normalisation folded in, checked against mol.eval_gto): the form the gemm kernel's
BasisSet evaluates. The file also carries the HF energy with its kinetic and potential parts, and the two
orbitals at a few points, for the Rust tests.
"""
import numpy as np
import pyscf
from pyscf import gto, scf

BASIS = "cc-pvtz"
mol = gto.M(atom="Be 0 0 0", basis=BASIS, cart=True, spin=0, verbose=0)
mf = scf.RHF(mol)
mf.conv_tol = 1e-12
energy = mf.kernel()
assert mf.converged, "RHF did not converge"
dm = mf.make_rdm1()
kinetic = float(np.einsum("ij,ji", mol.intor("int1e_kin"), dm))
occ = mf.mo_coeff[:, mf.mo_occ > 0]  # 1s, 2s
assert occ.shape[1] == 2

CARTESIANS = {0: [(0, 0, 0)], 2: [(2, 0, 0), (1, 1, 0), (1, 0, 1), (0, 2, 0), (0, 1, 1), (0, 0, 2)]}
kept_aos, shells = [], []
for ib in range(mol.nbas):
    l = mol.bas_angular(ib)
    ao0, ao1 = mol.ao_loc_nr()[ib], mol.ao_loc_nr()[ib + 1]
    if l not in CARTESIANS:
        assert np.abs(occ[ao0:ao1]).max() < 1e-10, f"occupied orbital with an l = {l} part"
        continue
    exps = mol.bas_exp(ib)
    coefs = mol.bas_ctr_coeff(ib)  # primitives x contractions
    ncart = len(CARTESIANS[l])
    for k in range(coefs.shape[1]):
        # libcint's Cartesian s functions carry the factor 1/sqrt(4 pi) of Y_00 (its d functions carry none)
        a = coefs[:, k] * gto.gto_norm(l, exps) * (np.sqrt(1 / (4 * np.pi)) if l == 0 else 1.0)
        keep = a != 0.0
        shells.append((l, exps[keep], a[keep]))
        kept_aos.extend(range(ao0 + k * ncart, ao0 + (k + 1) * ncart))

# The shells as written must be PySCF's AOs exactly (whatever normalisation PySCF applies).
pts = np.random.default_rng(7).normal(scale=1.5, size=(50, 3))
ao = mol.eval_gto("GTOval_cart", pts)
r2 = (pts**2).sum(1)
j = 0
for l, b, a in shells:
    radial = np.exp(-np.outer(r2, b)) @ a
    for powers in CARTESIANS[l]:
        mine = radial * np.prod(pts ** np.array(powers), axis=1)
        assert np.allclose(mine, ao[:, kept_aos[j]], rtol=1e-12, atol=1e-14), "normalisation differs from PySCF's"
        j += 1
mo_kept = occ[kept_aos]
check_pts = np.array([[0.0, 0.0, 0.05], [0.3, -0.2, 0.1], [1.0, 0.5, -0.7], [2.5, 0.0, 1.0]])
check_vals = mol.eval_gto("GTOval_cart", check_pts) @ occ

print(f"# Be RHF/{BASIS} (all-electron) from PySCF {pyscf.__version__}, written by scripts/pyscf-orbitals.py")
print("# energy: E_HF, kinetic <T>, potential <V> (Ha). nucleus: Z x y z (bohr).")
print("# shell: l n (angular momentum, primitives), then n lines 'exponent coefficient': the Cartesian functions")
print("#   x^i y^j z^k sum c exp(-e r^2) (d order xx xy xz yy yz zz), normalised as PySCF's.")
print("# orbital: one line per occupied orbital (1s, 2s), its coefficients over the functions in file order.")
print("# check: x y z phi_1s phi_2s as PySCF evaluates them.")
print(f"energy {energy:.12f} {kinetic:.12f} {energy - kinetic:.12f}")
print("nucleus 4 0 0 0")
for l, b, a in shells:
    print(f"shell {l} {len(b)}")
    for e, c in zip(b, a):
        print(f"{e:.10e} {c:.16e}")
for k in range(2):
    print("orbital " + " ".join(f"{c:.16e}" for c in mo_kept[:, k]))
for p, v in zip(check_pts, check_vals):
    print("check " + " ".join(f"{x:.6f}" for x in p) + " " + " ".join(f"{x:.16e}" for x in v))
