//! The helper's side: one request read from standard input, answered on standard output with
//! the pipeline cache of its pipelines, compiled on a thread each with a context's layout and
//! flags on the device it names; then the process exits, before the context creates the
//! pipelines (see [`super::process`]).

use super::protocol::{decode, read_frame, write_frame};
use crate::device::{Device, DeviceSelector, Instance, InstanceOptions};
use crate::error::{Error, Result};
use crate::pipeline::{each_on_a_thread, Pipelines};
use std::sync::Arc;

/// Serves one request (none where standard input ends first).
pub(super) fn serve() -> Result<()> {
    let (mut input, mut output) = (std::io::stdin().lock(), std::io::stdout().lock());
    let Some(payload) = read_frame(&mut input)? else {
        return Ok(());
    };
    let (uuid, sources) = decode(&payload)?;
    let pipelines = Pipelines::new(open(&uuid)?, None, None, None)?;
    each_on_a_thread(&sources, |source| pipelines.build_source(source).map(drop))?;
    let data = pipelines.cache_data()?;
    write_frame(&mut output, &data).map_err(|e| Error::InvalidOption(e.to_string()))
}

/// The device with `uuid`, opened as a context opens its own (no copy queues: only pipelines).
fn open(uuid: &str) -> Result<Arc<Device>> {
    let instance = Instance::new(&InstanceOptions { validation: false })?;
    let index = instance
        .devices()?
        .iter()
        .position(|(_, info)| info.device_uuid == uuid)
        .ok_or_else(|| Error::InvalidOption(format!("no device with UUID {uuid}")))?;
    Device::new(instance, &DeviceSelector::Index(index), 0, None)
}
