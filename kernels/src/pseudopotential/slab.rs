//! Paper 000's walker layout on the GPU: each walker's persistent data (electron positions, quadrature rotations,
//! transposed inverse, stored orbital gradient rows) contiguous in one slab, all slabs in one allocation at a fixed
//! walker stride, so a branching copy is one device-to-device copy and a migration one host transfer per walker and array.
//! Inside a slab each array keeps the layout the kernels read coalesced: positions `[electron][xyz]` f64, rotations
//! `[ion][3x3]` f64, inverse rows `[electron][stride]` S, gradient rows `[electron][xyz][stride]` S. Every array
//! and the walker stride are multiples of 256 bytes, so each array starts aligned for wide loads.
//!
//! Kernels take the allocation's base and the layout (`WalkerSlab` in common.cuh: walker w's array at
//! base + w * bytes + offset).

use super::{Setup, Walkers};
use crate::gpu::{CudaSlice, DriverContext, Gpu, GpuError};
use crate::Real;
use cudarc::driver::{sys, DevicePtr, DevicePtrMut, DeviceRepr};
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
    _s: PhantomData<S>,
}

impl<S: Real> Slab<S> {
    /// `count` zeroed walkers of `s` (with gradient rows if `gradients`).
    pub fn zeros(gpu: &Gpu, s: &Setup<S>, count: usize, gradients: bool) -> Result<Self, GpuError> {
        let layout = SlabLayout::new(s, gradients);
        let (ne, st) = (s.electrons, s.table.stride);
        let lens = [3 * ne, 9 * s.ion_count(), ne * st, if gradients { 3 * ne * st } else { 0 }];
        Ok(Slab { buf: gpu.zeros("the walkers' slabs", count * layout.bytes as usize)?, layout, count, lens, _s: PhantomData })
    }

    /// The walkers `w` (positions, rotations, inverses) in new slabs: three pitched copies.
    pub fn upload(gpu: &Gpu, s: &Setup<S>, w: &Walkers<S>, gradients: bool) -> Result<Self, GpuError> {
        let mut slab = Slab::zeros(gpu, s, w.count, gradients)?;
        slab.write_all(gpu, Field::Pos, &w.pos)?;
        slab.write_all(gpu, Field::Rot, &w.rot)?;
        slab.write_all(gpu, Field::Inv, &w.inv)?;
        Ok(slab)
    }

    /// Byte offset of array `f` in a walker's slab (the bytes before it are those of the arrays before it).
    pub fn layout_offset(&self, f: Field) -> usize {
        f.offset(&self.layout) as usize
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

    /// Walker k's arrays, one transfer each straight into its host vector.
    pub fn take(&self, gpu: &Gpu, k: usize) -> Result<HostWalker<S>, GpuError> {
        self.take_before(gpu, k, None)
    }

    /// Walker k's arrays before `upto` (positions and rotations before `Field::Inv`, the inverse rows too before
    /// `Field::Dpsi`), the others left empty: what a migration sends when the receiver rebuilds the rest.
    pub fn take_prefix(&self, gpu: &Gpu, k: usize, upto: Field) -> Result<HostWalker<S>, GpuError> {
        self.take_before(gpu, k, Some(upto))
    }

    fn take_before(&self, gpu: &Gpu, k: usize, upto: Option<Field>) -> Result<HostWalker<S>, GpuError> {
        let wanted = |f: Field| upto.is_none_or(|u| f < u);
        let h = HostWalker {
            pos: if wanted(Field::Pos) { self.read(gpu, k, Field::Pos)? } else { vec![] },
            rot: if wanted(Field::Rot) { self.read(gpu, k, Field::Rot)? } else { vec![] },
            inv: if wanted(Field::Inv) { self.read(gpu, k, Field::Inv)? } else { vec![] },
            dpsi: if wanted(Field::Dpsi) { self.read(gpu, k, Field::Dpsi)? } else { vec![] },
        };
        gpu.stream.synchronize().during("copying a walker's slab")?;
        Ok(h)
    }

    /// Array `f` of walker k (T: f64 for positions and rotations, S for rows) into a new host vector, in its own
    /// type: no staging buffer, no conversion (a migrating walker's rows are a megabyte at 512 electrons).
    fn read<T: Real>(&self, gpu: &Gpu, k: usize, f: Field) -> Result<Vec<T>, GpuError> {
        let n = self.lens[f as usize];
        let mut out = vec![T::zero(); n];
        if n > 0 {
            assert_eq!(f.size::<S>(), T::BYTES, "slab: array type");
            let at = k * self.walker_bytes() + f.offset(&self.layout) as usize;
            let bytes = self.buf.slice(at..at + n * T::BYTES);
            // SAFETY: the bytes hold n values of T (the field's element type, checked above), written by the kernels
            // or by `put`; the view covers exactly them.
            let view = unsafe { bytes.transmute::<T>(n) }.expect("slab: the array's bytes hold its values");
            gpu.stream.memcpy_dtoh(&view, &mut out).during("copying a walker's slab")?;
        }
        Ok(out)
    }

    /// Array `f` of walker k from `src` (its length, in its own type).
    fn write<T: Real>(&mut self, gpu: &Gpu, k: usize, f: Field, src: &[T]) -> Result<(), GpuError> {
        assert!(src.len() == self.lens[f as usize] && f.size::<S>() == T::BYTES, "slab: walker array size or type");
        if src.is_empty() {
            return Ok(());
        }
        let at = k * self.walker_bytes() + f.offset(&self.layout) as usize;
        let mut bytes = self.buf.slice_mut(at..at + src.len() * T::BYTES);
        // SAFETY: as in `read`: the view covers exactly the array's values of type T.
        let mut view = unsafe { bytes.transmute_mut::<T>(src.len()) }.expect("slab: the array's bytes hold its values");
        // from pageable memory the driver has staged `src` before returning
        gpu.stream.memcpy_htod(src, &mut view).during("copying a walker's slab")
    }

    /// Walker k's slab bytes before `upto` (all of them with None) copied on the device into `outbox` at byte `at`,
    /// where they stay for another rank of this process to copy (`put_device`): the walker's own slot may change
    /// at the next step before that rank has copied it. The copy is queued on this GPU's stream.
    pub fn stage(&self, gpu: &Gpu, k: usize, upto: Option<Field>, outbox: &mut CudaSlice<u8>, at: usize) -> Result<DeviceBytes, GpuError> {
        let (b, len) = (self.walker_bytes(), upto.map_or(self.walker_bytes(), |f| f.offset(&self.layout) as usize));
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

    /// Slot k takes the arrays given (positions and rotations in f64, inverse and gradient rows in S), one transfer
    /// each. Trailing arrays left empty (`take_prefix`'s) are not written: those rows stay as they were, for the
    /// caller to rebuild.
    pub fn put(&mut self, gpu: &Gpu, k: usize, [pos, rot]: [&[f64]; 2], [inv, dpsi]: [&[S]; 2]) -> Result<(), GpuError> {
        assert!(k < self.count, "slab: walker index");
        assert!(dpsi.is_empty() || !inv.is_empty(), "slab: gradient rows come with their inverse");
        self.write(gpu, k, Field::Pos, pos)?;
        self.write(gpu, k, Field::Rot, rot)?;
        if !inv.is_empty() {
            self.write(gpu, k, Field::Inv, inv)?;
        }
        if !dpsi.is_empty() {
            self.write(gpu, k, Field::Dpsi, dpsi)?;
        }
        Ok(())
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
    /// Bytes of an element: f64 positions and rotations, S rows.
    fn size<S>(self) -> usize {
        match self {
            Field::Pos | Field::Rot => 8,
            Field::Inv | Field::Dpsi => std::mem::size_of::<S>(),
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
            assert_eq!(slab.take(&gpu, k).unwrap(), host(k), "walker {k} as uploaded");
        }
        slab.copy(&gpu, 2, 0).unwrap();
        slab.copy(&gpu, 1, 2).unwrap();
        assert_eq!(slab.take(&gpu, 0).unwrap(), host(2));
        assert_eq!(slab.take(&gpu, 2).unwrap(), host(1));
        let mut moved = host(0);
        moved.dpsi.iter_mut().enumerate().for_each(|(i, x)| *x = f32::from(i as u16));
        slab.put(&gpu, 1, [&moved.pos, &moved.rot], [&moved.inv, &moved.dpsi]).unwrap();
        assert_eq!(slab.take(&gpu, 1).unwrap(), moved);
        assert_eq!(slab.take(&gpu, 0).unwrap(), host(2), "the neighbours stay");
        // a configuration: positions and rotations only, in and out; the rows of the slot it lands in stay
        let c = slab.take_prefix(&gpu, 2, Field::Inv).unwrap();
        assert_eq!((&c.pos, &c.rot, c.inv.len(), c.dpsi.len()), (&host(1).pos, &host(1).rot, 0, 0));
        slab.put(&gpu, 1, [&c.pos, &c.rot], [&[], &[]]).unwrap();
        assert_eq!(slab.take(&gpu, 1).unwrap(), HostWalker { pos: c.pos, rot: c.rot, ..moved.clone() });
        // the inverse rows too
        let c = slab.take_prefix(&gpu, 0, Field::Dpsi).unwrap();
        assert_eq!((&c.pos, &c.inv, c.dpsi.len()), (&host(2).pos, &host(2).inv, 0));
        slab.put(&gpu, 1, [&c.pos, &c.rot], [&c.inv, &[]]).unwrap();
        assert_eq!(slab.take(&gpu, 1).unwrap(), HostWalker { dpsi: moved.dpsi, ..host(2) });
    }
}
