//! Stream-K: a grid whose last wave would leave multiprocessors idle shares that work out.
//!
//! A GEMM of `tiles` workgroup tiles on a GPU that runs `resident` of them at once takes
//! `ceil(tiles / resident)` waves; the last one, `tiles % resident` tiles, leaves the rest of the
//! GPU idle. On the H200 (132 SMs, one 256-invocation workgroup tile each) 4096² of C in
//! 128x256 tiles is 512 tiles, 3.88 waves: a grid of 528 tiles (4224x4096, exactly 4 waves)
//! ran 2.4-3.3% faster per flop (docs/perf/h200-27-2.txt). Stream-K keeps all tiles but the
//! last `resident + tiles % resident` as they are, one workgroup each, and gives those last
//! tiles' K steps to `resident` workgroups in equal runs (the kernel side:
//! `crate::kernel::stream_k`). A run is at least one tile long and shorter than two, so it
//! touches at most three tiles and each tile is split between at most two workgroups, which
//! hand the partial tile over through scratch.

use crate::kernel::stream_k::FLAG_ALIGN;
use serde::Serialize;

/// The least share of the grid's time the last wave must leave idle for stream-K to be taken.
pub const MIN_IDLE: f64 = 0.01;

/// The fewest K steps per tile stream-K takes: a shorter K leaves the hand-over too large a
/// share of each run.
pub const MIN_TILE_STEPS: u32 = 16;

/// How a stream-K grid shares its work (plain data; the kernel reads it from push constants).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StreamK {
    /// Tiles before this one (in the kernel's walk order) take a workgroup each; the rest are
    /// shared.
    pub first_tile: u32,
    /// Workgroups that share the last tiles: as many as the GPU runs at once.
    pub sharing: u32,
    /// K steps per tile.
    pub tile_steps: u32,
    /// K steps per sharing workgroup (the first [`StreamK::longer`] take one more).
    pub steps: u32,
    /// How many sharing workgroups take one step more.
    pub longer: u32,
}

impl StreamK {
    /// The split of `tiles` tiles of `tile_steps` K steps each on a GPU that runs `resident`
    /// workgroups at once; `None` where the last wave is full or idles under [`MIN_IDLE`] of
    /// the grid's time, where K is under [`MIN_TILE_STEPS`], where the grid is one wave or
    /// less, or where its steps overflow the kernel's 32-bit counts.
    pub fn choose(tiles: u64, tile_steps: u32, resident: u32) -> Option<Self> {
        let g = u64::from(resident);
        if resident < 2 || tile_steps < MIN_TILE_STEPS || tiles <= g {
            return None;
        }
        let last = tiles % g;
        let waves = tiles.div_ceil(g);
        if last == 0 || ((g - last) as f64) < MIN_IDLE * (waves * g) as f64 {
            return None;
        }
        if tiles.checked_mul(u64::from(tile_steps))? > u64::from(u32::MAX) {
            return None;
        }
        let shared = last + g;
        let total = shared * u64::from(tile_steps);
        Some(Self {
            first_tile: u32::try_from(tiles - shared).ok()?,
            sharing: resident,
            tile_steps,
            steps: u32::try_from(total / g).ok()?,
            longer: u32::try_from(total % g).ok()?,
        })
    }

    /// Workgroups in the grid.
    pub fn workgroups(&self) -> u32 {
        self.first_tile + self.sharing
    }

    /// Bytes of flags at the start of scratch (zeroed before the dispatch): a word per
    /// workgroup of the grid, padded as the kernel expects.
    pub fn flag_bytes(&self) -> u64 {
        (u64::from(self.workgroups()) * 4).next_multiple_of(u64::from(FLAG_ALIGN))
    }

    /// Bytes of scratch: the flags, then a slot of `slot_bytes` per sharing workgroup.
    pub fn scratch_bytes(&self, slot_bytes: u64) -> u64 {
        self.flag_bytes() + u64::from(self.sharing) * slot_bytes
    }

    /// The K steps `[start, end)` (over all tiles in walk order) that workgroup `wg` runs, as the
    /// kernel computes them.
    pub fn run(&self, wg: u32) -> (u64, u64) {
        let steps = u64::from(self.tile_steps);
        if wg < self.first_tile {
            let start = u64::from(wg) * steps;
            return (start, start + steps);
        }
        let s = u64::from(wg - self.first_tile);
        let longer = u64::from(self.longer);
        let start = u64::from(self.first_tile) * steps + s * u64::from(self.steps) + s.min(longer);
        (start, start + u64::from(self.steps) + u64::from(s < longer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every run covers its share with no gap or overlap, sharing runs are one to two tiles
    /// long, and every split tile has exactly one hand-over (its later steps, at the start of
    /// the next run) for the run that ends inside it.
    fn check_runs(sk: &StreamK, tiles: u64) {
        let steps = u64::from(sk.tile_steps);
        let mut next = 0;
        for wg in 0..sk.workgroups() {
            let (start, end) = sk.run(wg);
            assert_eq!(start, next, "{sk:?} workgroup {wg}");
            if wg >= sk.first_tile {
                assert!(end - start >= steps && end - start < 2 * steps, "{sk:?} run {wg}");
                if end % steps != 0 {
                    let (s2, e2) = sk.run(wg + 1);
                    assert_eq!(s2, end);
                    assert!(
                        e2 >= (end / steps + 1) * steps,
                        "{sk:?}: run {} must finish tile",
                        wg + 1
                    );
                }
            } else {
                assert_eq!(end - start, steps);
            }
            next = end;
        }
        assert_eq!(next, tiles * steps, "{sk:?}");
    }

    #[test]
    fn h200_grids_share_their_last_wave() {
        // 4096^2 in 128x256 tiles, K = 4096 in 64-deep steps.
        let sk = StreamK::choose(512, 64, 132).expect("3.88 waves");
        assert_eq!((sk.first_tile, sk.sharing), (512 - 116 - 132, 132));
        assert_eq!(sk.workgroups(), 396);
        check_runs(&sk, 512);
        for (tiles, steps) in [(2048, 128), (1376, 64), (133, 16), (200, 17), (1000, 1000)] {
            check_runs(&StreamK::choose(tiles, steps, 132).expect("a partial last wave"), tiles);
        }
        assert_eq!(sk.flag_bytes(), 1792);
        assert_eq!(sk.scratch_bytes(131072), 1792 + 132 * 131072);
    }

    #[test]
    fn full_or_short_grids_keep_a_workgroup_per_tile() {
        assert_eq!(StreamK::choose(528, 64, 132), None, "exactly 4 waves");
        assert_eq!(StreamK::choose(128, 64, 132), None, "under one wave");
        assert_eq!(StreamK::choose(512, 4, 132), None, "K of 4 steps");
        assert_eq!(StreamK::choose(512, 64, 1), None, "one workgroup at a time");
        // 131 of 132 in the last of 100 waves: under 1% idle.
        assert_eq!(StreamK::choose(99 * 132 + 131, 64, 132), None);
        assert_eq!(StreamK::choose(1 << 28, 64, 132), None, "steps past 32 bits");
    }
}
