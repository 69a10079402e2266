//! Paper 000's walker layout on the GPU: each walker's persistent data (electron positions, quadrature rotations,
//! transposed inverse, stored orbital gradient rows) contiguous in one slab, all slabs in one allocation at a fixed
//! walker stride, so a branching copy is one device-to-device copy and a migration one host transfer per walker.
//! Inside a slab each array keeps the layout the kernels read coalesced: positions `[electron][xyz]` f64, rotations
//! `[ion][3x3]` f64, inverse rows `[electron][stride]` S, gradient rows `[electron][xyz][stride]` S. Every array
//! and the walker stride are multiples of 256 bytes, so each array starts aligned for wide loads.
//!
//! Kernels take the allocation's base and the layout (`WalkerSlab` in common.cuh: walker w's array at
//! base + w * bytes + offset).

use super::{Setup, Walkers};
use crate::gpu::{CudaSlice, DriverContext, Gpu, GpuError};
use crate::Real;
use cudarc::driver::{sys, DevicePtr, DevicePtrMut, DeviceRepr, PinnedHostSlice};
use std::marker::PhantomData;

/// Alignment of every array and of the walker stride.
const ALIGN: usize = 256;

/// Byte offsets of one walker's arrays and the walker stride; mirrors `WalkerSlab` in common.cuh.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlabLayout {
    /// Walker stride.
    pub bytes: i64,
    pub pos: i64,
    pub rot: i64,
    pub inv: i64,
    /// Gradient rows (empty where the kernel keeps none: the pseudopotential mini-app's walkers).
    pub dpsi: i64,
}
// SAFETY: plain-old-data with the C layout of the kernels' struct.
unsafe impl DeviceRepr for SlabLayout {}

impl SlabLayout {
    /// The slab of a walker of `s` with storage S, with or without gradient rows.
    pub fn new<S: Real>(s: &Setup<S>, gradients: bool) -> SlabLayout {
        let (ne, st, sb) = (s.electrons, s.table.stride, std::mem::size_of::<S>());
        let up = |x: usize| x.next_multiple_of(ALIGN);
        let rot = up(24 * ne);
        let inv = up(rot + 72 * s.ion_count());
        let dpsi = up(inv + ne * st * sb);
        let end = up(dpsi + if gradients { 3 * ne * st * sb } else { 0 });
        SlabLayout { bytes: end as i64, pos: 0, rot: rot as i64, inv: inv as i64, dpsi: dpsi as i64 }
    }
    fn len(&self, field: i64) -> usize {
        let next = [self.pos, self.rot, self.inv, self.dpsi, self.bytes].into_iter().filter(|&o| o > field).min().unwrap_or(self.bytes);
        (next - field) as usize
    }
}

/// One walker's arrays on the host: positions and rotations in f64, inverse and gradient rows in the storage S.
#[derive(Clone, Debug, PartialEq)]
pub struct HostWalker<S> {
    pub pos: Vec<f64>,
    pub rot: Vec<f64>,
    pub inv: Vec<S>,
    pub dpsi: Vec<S>,
}

/// Where a walker's first slab bytes lie on a device of this process: what a walker carries instead of its arrays
/// between threads ranks (one GPU each), for the receiving rank to copy device to device (`Slab::put_device`).
/// Meaningless in another process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceBytes {
    /// Device address of the bytes.
    pub ptr: u64,
    /// The context that owns them (`CUcontext` as an address).
    pub ctx: u64,
    pub len: u64,
}

/// All walkers' slabs in one device allocation.
pub struct Slab<S> {
    pub buf: CudaSlice<u8>,
    pub layout: SlabLayout,
    pub count: usize,
    /// Elements of each array per walker: positions, rotations, inverse, gradient rows.
    lens: [usize; 4],
    /// Page-locked host memory of one walker's slab, through which a walker goes to and from the host (`take`,
    /// `put`) in one DMA transfer: from pageable memory the driver stages a transfer chunk by chunk, and a migrating
    /// walker's 0.5 MB took about 0.27 ms that way on the H200 host (8e14737). Made on first use.
    staging: Option<PinnedHostSlice<u8>>,
    _s: PhantomData<S>,
}

impl<S: Real> Slab<S> {
    /// `count` zeroed walkers of `s` (with gradient rows if `gradients`).
    pub fn zeros(gpu: &Gpu, s: &Setup<S>, count: usize, gradients: bool) -> Result<Self, GpuError> {
        let layout = SlabLayout::new(s, gradients);
        let (ne, st) = (s.electrons, s.table.stride);
        let lens = [3 * ne, 9 * s.ion_count(), ne * st, if gradients { 3 * ne * st } else { 0 }];
        Ok(Slab { buf: gpu.zeros("the walkers' slabs", count * layout.bytes as usize)?, layout, count, lens, staging: None, _s: PhantomData })
    }

    /// The walkers `w` (positions, rotations, inverses) in new slabs: three pitched copies.
    pub fn upload(gpu: &Gpu, s: &Setup<S>, w: &Walkers<S>, gradients: bool) -> Result<Self, GpuError> {
        let mut slab = Slab::zeros(gpu, s, w.count, gradients)?;
        slab.write_all(gpu, Field::Pos, &w.pos)?;
        slab.write_all(gpu, Field::Rot, &w.rot)?;
        slab.write_all(gpu, Field::Inv, &w.inv)?;
        Ok(slab)
    }

    /// Bytes of a walker's slab before array `upto` (the arrays before it), or all of them with None.
    pub fn prefix_len(&self, upto: Option<Field>) -> usize {
        upto.map_or(self.walker_bytes(), |f| f.offset(&self.layout) as usize)
    }

    pub fn walker_bytes(&self) -> usize {
        self.layout.bytes as usize
    }

    /// Array `f` of every walker from `host` (`[walker][array]`), in one pitched copy (cuMemcpy2DAsync): the
    /// per-step rotations cost one transfer, not one per walker.
    pub fn write_all<T: DeviceRepr>(&mut self, gpu: &Gpu, f: Field, host: &[T]) -> Result<(), GpuError> {
        let off = f.offset(&self.layout) as usize;
        let width = std::mem::size_of_val(host) / self.count;
        assert!(host.len() == self.lens[f as usize] * self.count && width <= self.layout.len(off as i64), "slab: array size");
        if width == 0 {
            return Ok(());
        }
        let stream = gpu.stream.clone();
        // the raw call below needs the context current on this thread (a rank's thread, with several GPUs)
        gpu.ctx.bind_to_thread().during("binding the GPU context")?;
        let (dst, _sync) = self.buf.device_ptr_mut(&stream);
        let copy = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
            srcHost: host.as_ptr() as *const std::ffi::c_void,
            srcDevice: 0,
            srcArray: std::ptr::null_mut(),
            srcPitch: width,
            dstXInBytes: off,
            dstY: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            dstHost: std::ptr::null_mut(),
            dstDevice: dst,
            dstArray: std::ptr::null_mut(),
            dstPitch: self.layout.bytes as usize,
            WidthInBytes: width,
            Height: self.count,
        };
        // SAFETY: the source is `count` rows of `width` bytes of `host` (checked above), alive for the call; from
        // pageable memory the driver has staged it before returning. The destination rows lie at offset `off` of
        // each walker's slab, `width` bytes inside the array (checked), all within buf (count * bytes).
        unsafe { sys::cuMemcpy2DAsync_v2(&copy, stream.cu_stream()) }.result().during("copying an array of every walker to the slabs")
    }

    /// Walker `from`'s slab over walker `to`'s: one device-to-device copy.
    pub fn copy(&mut self, gpu: &Gpu, from: usize, to: usize) -> Result<(), GpuError> {
        assert!(from < self.count && to < self.count, "slab: walker index");
        if from == to {
            return Ok(());
        }
        let b = self.walker_bytes();
        let (mut lo, mut hi) = self.buf.split_at_mut(from.max(to) * b);
        let (src, mut dst) = if from < to { (lo.slice(from * b..(from + 1) * b), hi.slice_mut(..b)) } else { (hi.slice(..b), lo.slice_mut(to * b..(to + 1) * b)) };
        gpu.stream.memcpy_dtod(&src, &mut dst).during("copying a walker's slab")
    }

    /// Every walker's positions (`[walker][e][3]`), from one download of the whole slab: for tests that follow every
    /// walker at every step (a walker at a time is a transfer each).
    pub fn positions(&self, gpu: &Gpu) -> Result<Vec<f64>, GpuError> {
        let (raw, b) = (gpu.download(&self.buf)?, self.walker_bytes());
        let at = Some((Field::Pos.offset(&self.layout) as usize, self.lens[Field::Pos as usize]));
        Ok((0..self.count).flat_map(|k| parse::<f64>(&raw[k * b..(k + 1) * b], at)).collect())
    }

    /// Walker k's arrays before `upto` (all with None; positions and rotations before `Field::Inv`, the inverse rows
    /// too before `Field::Dpsi`), the others left empty (what a migration sends when the receiver rebuilds the rest):
    /// the slab's first bytes into the staging memory in one transfer, then each array out of it in its own type.
    pub fn take(&mut self, gpu: &Gpu, k: usize, upto: Option<Field>) -> Result<HostWalker<S>, GpuError> {
        assert!(k < self.count, "slab: walker index");
        let (b, len) = (self.walker_bytes(), self.prefix_len(upto));
        let src = self.buf.slice(k * b..k * b + len);
        let stage = staging(&mut self.staging, gpu, b)?;
        gpu.stream.memcpy_dtoh(&src, &mut stage[..len]).during("copying a walker's slab")?;
        gpu.stream.synchronize().during("copying a walker's slab")?;
        let raw: &[u8] = stage;
        let get = |f: Field| upto.is_none_or(|u| f < u).then(|| (f.offset(&self.layout) as usize, self.lens[f as usize]));
        Ok(HostWalker { pos: parse(raw, get(Field::Pos)), rot: parse(raw, get(Field::Rot)), inv: parse(raw, get(Field::Inv)), dpsi: parse(raw, get(Field::Dpsi)) })
    }

    /// Walker k's slab bytes before `upto` (all of them with None) copied on the device into `outbox` at byte `at`,
    /// where they stay for another rank of this process to copy (`put_device`): the walker's own slot may change
    /// at the next step before that rank has copied it. The copy is queued on this GPU's stream.
    pub fn stage(&self, gpu: &Gpu, k: usize, upto: Option<Field>, outbox: &mut CudaSlice<u8>, at: usize) -> Result<DeviceBytes, GpuError> {
        let (b, len) = (self.walker_bytes(), self.prefix_len(upto));
        assert!(k < self.count && at + len <= outbox.len(), "slab: staging a walker");
        let mut dst = outbox.slice_mut(at..at + len);
        gpu.stream.memcpy_dtod(&self.buf.slice(k * b..k * b + len), &mut dst).during("staging a walker's slab")?;
        let (ptr, _sync) = dst.device_ptr(&gpu.stream);
        Ok(DeviceBytes { ptr, ctx: gpu.ctx.cu_ctx() as u64, len: len as u64 })
    }

    /// Slot k takes the bytes `from` (staged by `stage` on a GPU of this process, this one or another) as the first
    /// bytes of its slab: one device-to-device copy, over the devices' link where they reach each other.
    pub fn put_device(&mut self, gpu: &Gpu, k: usize, from: DeviceBytes) -> Result<(), GpuError> {
        let b = self.walker_bytes();
        assert!(k < self.count && from.len as usize <= b, "slab: a staged walker");
        let peer = from.ctx as sys::CUcontext;
        gpu.reach(peer)?;
        let stream = gpu.stream.clone();
        let mut slot = self.buf.slice_mut(k * b..k * b + from.len as usize);
        let (dst, _sync) = slot.device_ptr_mut(&stream);
        // SAFETY: the source is `len` bytes of a live allocation of context `peer` that its rank leaves untouched
        // until every rank has passed the next generation's sum (`stage`), after this copy has completed (the caller
        // synchronizes this stream before its next sum); the destination is slot k's first `len` bytes (checked).
        unsafe { sys::cuMemcpyPeerAsync(dst, gpu.ctx.cu_ctx(), from.ptr, peer, from.len as usize, stream.cu_stream()) }
            .result()
            .during("copying a walker's slab from another GPU")
    }

    /// Slot k takes the arrays given (positions and rotations in f64, inverse and gradient rows in S), written into
    /// the staging memory and sent in one transfer. Trailing arrays left empty (those `take` left out) are not written:
    /// those rows stay as they were, for the caller to rebuild.
    pub fn put(&mut self, gpu: &Gpu, k: usize, [pos, rot]: [&[f64]; 2], [inv, dpsi]: [&[S]; 2]) -> Result<(), GpuError> {
        assert!(k < self.count, "slab: walker index");
        assert!(pos.len() == self.lens[0] && rot.len() == self.lens[1], "slab: a walker carries its positions and rotations");
        assert!(dpsi.is_empty() || !inv.is_empty(), "slab: gradient rows come with their inverse");
        let b = self.walker_bytes();
        let len = if inv.is_empty() { Field::Inv.offset(&self.layout) as usize } else if dpsi.is_empty() { Field::Dpsi.offset(&self.layout) as usize } else { b };
        let at = |f: Field| f.offset(&self.layout) as usize;
        let (pos_at, rot_at, inv_at, dpsi_at) = (at(Field::Pos), at(Field::Rot), at(Field::Inv), at(Field::Dpsi));
        for (f, n) in [(Field::Inv, inv.len()), (Field::Dpsi, dpsi.len())] {
            assert!(n == 0 || n == self.lens[f as usize], "slab: walker array size");
        }
        let stage = staging(&mut self.staging, gpu, b)?;
        store(&mut stage[pos_at..], pos);
        store(&mut stage[rot_at..], rot);
        store(&mut stage[inv_at..], inv);
        store(&mut stage[dpsi_at..], dpsi);
        let mut dst = self.buf.slice_mut(k * b..k * b + len);
        gpu.stream.memcpy_htod(&stage[..len], &mut dst).during("copying a walker's slab")?;
        // the staging memory is written again by the next put or take: this transfer must be done with it first
        gpu.stream.synchronize().during("copying a walker's slab")
    }
}

/// The staging memory of one walker's slab (`bytes`), page-locked (not write-combined: the host reads it back),
/// allocated on first use.
fn staging<'a>(slot: &'a mut Option<PinnedHostSlice<u8>>, gpu: &Gpu, bytes: usize) -> Result<&'a mut [u8], GpuError> {
    if slot.is_none() {
        // SAFETY: the memory is written (by a transfer or by `store`) before anything reads it.
        *slot = Some(unsafe { gpu.ctx.alloc_pinned_with_flags::<u8>(bytes, 0) }.during("allocating page-locked staging memory")?);
    }
    slot.as_mut().expect("allocated above").as_mut_slice().during("reading the staging memory")
}

/// `n` values of T at byte `at` of `raw` (None: not wanted, so empty).
fn parse<T: Real>(raw: &[u8], at: Option<(usize, usize)>) -> Vec<T> {
    at.map_or(vec![], |(at, n)| raw[at..at + n * T::BYTES].chunks_exact(T::BYTES).map(T::read_le).collect())
}

/// `v` into the front of `out`, each value in its own width.
fn store<T: Real>(out: &mut [u8], v: &[T]) {
    for (c, &x) in out[..v.len() * T::BYTES].chunks_exact_mut(T::BYTES).zip(v) {
        x.write_le(c);
    }
}

/// The arrays of a slab, in their order in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Field {
    Pos,
    Rot,
    Inv,
    Dpsi,
}

impl Field {
    fn offset(self, l: &SlabLayout) -> i64 {
        match self {
            Field::Pos => l.pos,
            Field::Rot => l.rot,
            Field::Inv => l.inv,
            Field::Dpsi => l.dpsi,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Channels, Rule};
    use super::*;

    #[test]
    fn layout_is_aligned_and_holds_every_array() {
        let s = Setup::<f64>::carbon(8, Rule::P12, Channels::carbon_bfd(), 1).unwrap().convert::<f32>();
        for gradients in [false, true] {
            let l = SlabLayout::new(&s, gradients);
            let (ne, st) = (s.electrons, s.table.stride);
            for o in [l.pos, l.rot, l.inv, l.dpsi, l.bytes] {
                assert_eq!(o % ALIGN as i64, 0);
            }
            assert!(l.pos == 0 && l.rot >= 24 * ne as i64 && l.inv >= l.rot + 72 * s.ion_count() as i64);
            assert!(l.dpsi >= l.inv + (ne * st * 4) as i64);
            let dpsi = if gradients { 3 * ne * st * 4 } else { 0 };
            assert!(l.bytes >= l.dpsi + dpsi as i64 && l.bytes < l.dpsi + dpsi as i64 + ALIGN as i64);
            assert_eq!(l.len(l.inv), (l.dpsi - l.inv) as usize);
        }
    }

    /// Walkers uploaded with pitched copies come back whole, one slab copied over another in either direction
    /// moves every array, and a walker put into a slot comes back as it went in.
    #[test]
    fn slabs_copy_take_and_put_whole_walkers_when_present() {
        let Some(gpu) = crate::gpu::for_test() else { return };
        let s = Setup::<f64>::carbon(8, Rule::P12, Channels::carbon_bfd(), 2).unwrap().convert::<f32>();
        let w = Walkers::random(&s, 3, 5).convert::<f32>();
        let mut slab = Slab::upload(&gpu, &s, &w, true).unwrap();
        let (ne, ni, st) = (s.electrons, s.ion_count(), s.table.stride);
        let host = |k: usize| HostWalker {
            pos: w.pos[3 * ne * k..3 * ne * (k + 1)].to_vec(),
            rot: w.rot[9 * ni * k..9 * ni * (k + 1)].to_vec(),
            inv: w.inv[ne * st * k..ne * st * (k + 1)].to_vec(),
            dpsi: vec![0.0f32; 3 * ne * st],
        };
        for k in 0..3 {
            assert_eq!(slab.take(&gpu, k, None).unwrap(), host(k), "walker {k} as uploaded");
        }
        slab.copy(&gpu, 2, 0).unwrap();
        slab.copy(&gpu, 1, 2).unwrap();
        assert_eq!(slab.take(&gpu, 0, None).unwrap(), host(2));
        assert_eq!(slab.take(&gpu, 2, None).unwrap(), host(1));
        let mut moved = host(0);
        moved.dpsi.iter_mut().enumerate().for_each(|(i, x)| *x = f32::from(i as u16));
        slab.put(&gpu, 1, [&moved.pos, &moved.rot], [&moved.inv, &moved.dpsi]).unwrap();
        assert_eq!(slab.take(&gpu, 1, None).unwrap(), moved);
        assert_eq!(slab.take(&gpu, 0, None).unwrap(), host(2), "the neighbours stay");
        // a configuration: positions and rotations only, in and out; the rows of the slot it lands in stay
        let c = slab.take(&gpu, 2, Some(Field::Inv)).unwrap();
        assert_eq!((&c.pos, &c.rot, c.inv.len(), c.dpsi.len()), (&host(1).pos, &host(1).rot, 0, 0));
        slab.put(&gpu, 1, [&c.pos, &c.rot], [&[], &[]]).unwrap();
        assert_eq!(slab.take(&gpu, 1, None).unwrap(), HostWalker { pos: c.pos, rot: c.rot, ..moved.clone() });
        // the inverse rows too
        let c = slab.take(&gpu, 0, Some(Field::Dpsi)).unwrap();
        assert_eq!((&c.pos, &c.inv, c.dpsi.len()), (&host(2).pos, &host(2).inv, 0));
        slab.put(&gpu, 1, [&c.pos, &c.rot], [&c.inv, &[]]).unwrap();
        assert_eq!(slab.take(&gpu, 1, None).unwrap(), HostWalker { dpsi: moved.dpsi, ..host(2) });
    }
}
