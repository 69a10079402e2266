//! Checkpoint files: the state of a DMC run at the end of a generation, written atomically and read back only when
//! it belongs to the same run.
//!
//! Layout (little-endian): the magic `QMCBDMC\0`, the format version, the [`Header`] (what identifies the run), the
//! driver's state, the walkers (each length-prefixed, in global order: rank 0's first), and an FNV-1a checksum of
//! everything before it. A file with another magic, version or header, or one cut short or damaged, is refused with
//! one sentence and left as it is.
//!
//! Writing goes to `FILE.tmp`, which is flushed to disk (fsync) and then renamed over `FILE`: the rename is atomic,
//! so a crash mid-write leaves the previous checkpoint whole.

use crate::ensemble::pack::{frames, put_bytes, put_f64, put_u64, Reader, Truncated};
use std::fs::File;
use std::io::Write;
use std::path::Path;

pub const MAGIC: &[u8; 8] = b"QMCBDMC\0";
/// Bumped whenever the layout or the meaning of a field changes: an old file is then refused, not misread.
pub const VERSION: u64 = 1;

/// What a restart must agree with for the chains to continue: the system and every parameter that shapes a
/// generation. (The number of measured steps may grow: a restart can extend a run.)
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The system with whatever parameters define it, e.g. `he` or `heg electrons=14 rs=1`.
    pub system: String,
    pub walkers: u64,
    pub seed: u64,
    pub tau: f64,
    pub feedback: f64,
    pub equil: u64,
}

impl Header {
    fn put(&self, out: &mut Vec<u8>) {
        put_bytes(out, self.system.as_bytes());
        put_u64(out, self.walkers);
        put_u64(out, self.seed);
        put_f64(out, self.tau);
        put_f64(out, self.feedback);
        put_u64(out, self.equil);
    }
    fn get(r: &mut Reader) -> Result<Header, Truncated> {
        Ok(Header {
            system: String::from_utf8_lossy(r.bytes()?).into_owned(),
            walkers: r.u64()?,
            seed: r.u64()?,
            tau: r.f64()?,
            feedback: r.f64()?,
            equil: r.u64()?,
        })
    }
    /// The first field in which `self` (the file's) differs from `want` (the run's), as a sentence.
    fn mismatch(&self, want: &Header) -> Option<String> {
        let fields: [(&str, String, String); 6] = [
            ("system", self.system.clone(), want.system.clone()),
            ("walkers", self.walkers.to_string(), want.walkers.to_string()),
            ("seed", self.seed.to_string(), want.seed.to_string()),
            ("tau", self.tau.to_string(), want.tau.to_string()),
            ("feedback", self.feedback.to_string(), want.feedback.to_string()),
            ("equilibration generations", self.equil.to_string(), want.equil.to_string()),
        ];
        fields.into_iter().find(|f| f.1 != f.2).map(|(name, file, run)| format!("it was written with {name} {file}, this run has {run}"))
    }
}

/// FNV-1a, 64 bits: enough to tell a damaged file from a whole one (not a defence against forgery).
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Write a checkpoint atomically: `state` is the driver's packed state, `walkers` the packed walkers in order.
pub fn save(path: &Path, header: &Header, state: &[u8], walkers: &[&[u8]]) -> std::io::Result<()> {
    let mut out = MAGIC.to_vec();
    put_u64(&mut out, VERSION);
    header.put(&mut out);
    put_bytes(&mut out, state);
    put_u64(&mut out, walkers.len() as u64);
    for w in walkers {
        put_bytes(&mut out, w);
    }
    let sum = checksum(&out);
    put_u64(&mut out, sum);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = Path::new(&tmp);
    {
        let mut f = File::create(tmp)?;
        f.write_all(&out)?;
        f.sync_all()?;
    }
    std::fs::rename(tmp, path)?;
    // the rename itself reaches the disk with the directory
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir).and_then(|d| d.sync_all()).ok();
    }
    Ok(())
}

/// A checkpoint's contents: the driver's packed state and the packed walkers.
#[derive(Debug)]
pub struct Loaded {
    pub state: Vec<u8>,
    pub walkers: Vec<Vec<u8>>,
}

/// Read a checkpoint written for `want`; Err is one sentence naming the file.
pub fn load(path: &Path, want: &Header) -> Result<Loaded, String> {
    let name = path.display();
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read checkpoint {name}: {e}"))?;
    if bytes.len() < 8 || &bytes[..8] != MAGIC {
        return Err(format!("{name} is not a qmc DMC checkpoint (no {:?} at its start)", "QMCBDMC"));
    }
    let damaged = || format!("checkpoint {name} is truncated or damaged ({} bytes, checksum does not match): restart from an intact copy", bytes.len());
    let mut r = Reader::new(&bytes[8..]);
    let version = r.u64().map_err(|_| damaged())?;
    if version != VERSION {
        return Err(format!("checkpoint {name} has format version {version}; this qmc reads version {VERSION} only"));
    }
    if bytes.len() < 16 + 8 || checksum(&bytes[..bytes.len() - 8]) != u64::from_le_bytes(bytes[bytes.len() - 8..].try_into().unwrap()) {
        return Err(damaged());
    }
    let mut r = Reader::new(&bytes[16..bytes.len() - 8]);
    let body = (|| {
        let header = Header::get(&mut r)?;
        let state = r.bytes()?.to_vec();
        let n = r.u64()? as usize;
        let walkers = (0..n.min(r.rest.len())).map(|_| r.bytes().map(<[u8]>::to_vec)).collect::<Result<Vec<_>, _>>()?;
        if walkers.len() != n || !r.rest.is_empty() {
            return Err(Truncated);
        }
        Ok((header, state, walkers))
    })();
    let (header, state, walkers) = body.map_err(|_| damaged())?;
    if let Some(why) = header.mismatch(want) {
        return Err(format!("checkpoint {name} belongs to another run: {why}"));
    }
    Ok(Loaded { state, walkers })
}

/// Merge framed walker buffers (one per rank, as `pack::pack_all` makes them) into one list, in order.
pub fn merge(buffers: &[Vec<u8>]) -> Result<Vec<&[u8]>, Truncated> {
    let mut all = vec![];
    for b in buffers {
        all.extend(frames(b)?);
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header { system: "he".into(), walkers: 64, seed: 3, tau: 0.02, feedback: 10.0, equil: 500 }
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("qmc-ckpt-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join("run.ckpt")
    }

    #[test]
    fn a_checkpoint_reads_back_and_foreign_or_damaged_ones_are_refused() {
        let path = scratch("unit");
        save(&path, &header(), b"state", &[b"w0", b"w1!"]).unwrap();
        let l = load(&path, &header()).unwrap();
        assert_eq!((l.state.as_slice(), l.walkers.len()), (&b"state"[..], 2));
        assert_eq!(l.walkers[1], b"w1!");
        assert!(!path.with_extension("ckpt.tmp").exists());
        let good = std::fs::read(&path).unwrap();

        let other = Header { system: "h2".into(), ..header() };
        assert!(load(&path, &other).unwrap_err().contains("belongs to another run: it was written with system he, this run has h2"));
        let other = Header { tau: 0.01, ..header() };
        assert!(load(&path, &other).unwrap_err().contains("tau 0.02, this run has 0.01"));
        // every truncation, and a flipped byte, is caught
        for cut in [0, 5, 12, 30, good.len() - 9, good.len() - 1] {
            std::fs::write(&path, &good[..cut]).unwrap();
            let e = load(&path, &header()).unwrap_err();
            assert!(e.contains("truncated or damaged") || e.contains("not a qmc DMC checkpoint"), "cut {cut}: {e}");
        }
        let mut flipped = good.clone();
        flipped[40] ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert!(load(&path, &header()).unwrap_err().contains("truncated or damaged"));
        let mut newer = good.clone();
        newer[8] = 2;
        std::fs::write(&path, &newer).unwrap();
        assert!(load(&path, &header()).unwrap_err().contains("format version 2; this qmc reads version 1"));
        // the file a reader refused is left as it was
        assert_eq!(std::fs::read(&path).unwrap(), newer);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
