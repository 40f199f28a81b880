//! What a [`Context`] keeps between calls for the next ones: the cores of dropped streams
//! (command pool, timeline, staging memory) and, through its pool, idle buffers; counted and
//! freed on request.

use super::Context;
use crate::device::QueueRef;
use crate::error::Result;
use crate::submit::StreamCore;

/// Stream cores kept idle for reuse per context.
const IDLE_CORES: usize = 8;

impl Context {
    /// An idle stream core on `queue`, if a dropped stream left one.
    pub(crate) fn idle_core(&self, queue: QueueRef) -> Option<StreamCore> {
        let mut idle = self.idle_cores.lock().unwrap_or_else(|e| e.into_inner());
        let i = idle.iter().position(|c| c.queue() == queue)?;
        Some(idle.swap_remove(i))
    }

    /// Takes a dropped stream's core: its enqueued work is discarded, its submitted work waited
    /// for, then it is kept for a next stream (at most [`IDLE_CORES`]); a core whose work failed
    /// or timed out is dropped (which leaks what the GPU may still use).
    pub(crate) fn recycle_core(&self, mut core: StreamCore) {
        core.abort();
        if core.finish().is_ok() {
            let mut idle = self.idle_cores.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < IDLE_CORES {
                idle.push(core);
            }
        }
    }

    /// Bytes of memory this context keeps for reuse between calls: idle buffers of its pool
    /// (bands, readback, scratch) and the staging memory of its idle streams. After a large
    /// GEMM this can be gigabytes; [`Context::release_idle_memory`] frees it.
    pub fn idle_memory(&self) -> u64 {
        let cores: u64 = {
            let idle = self.idle_cores.lock().unwrap_or_else(|e| e.into_inner());
            idle.iter().map(StreamCore::staging_bytes).sum()
        };
        let blocking = self.blocking.lock().unwrap_or_else(|e| e.into_inner()).staging_bytes();
        self.pool.idle_bytes() + cores + blocking
    }

    /// Frees the memory [`Context::idle_memory`] counts and returns its bytes, for a program
    /// that shares the device with other work. Work in flight keeps what it uses; later calls
    /// allocate again what they need (the first of them runs slower for it).
    pub fn release_idle_memory(&self) -> Result<u64> {
        let cores: Vec<StreamCore> = std::mem::take(&mut *self.idle_cores.lock().unwrap_or_else(|e| e.into_inner()));
        // Idle cores finished their work when they were recycled: dropping them frees at once.
        let mut freed: u64 = cores.iter().map(StreamCore::staging_bytes).sum();
        drop(cores);
        freed += self
            .blocking
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .release_staging()?;
        Ok(freed + self.pool.trim())
    }
}
