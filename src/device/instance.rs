//! The Vulkan instance, optionally with the Khronos validation layer and a debug messenger that
//! records every warning and error so tests can fail on any.

use super::{query_device, DeviceInfo};
use crate::error::{Error, Result};
use ash::vk;
use std::ffi::{c_void, CStr};
use std::sync::{Arc, Mutex};

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// Instance settings.
#[derive(Clone, Debug, Default)]
pub struct InstanceOptions {
    /// Enable `VK_LAYER_KHRONOS_validation` and a debug messenger. Default: false, unless the
    /// environment variable `VK_SGMAT_VALIDATION=1` is set. Creation fails with
    /// [`Error::ValidationLayerMissing`] when the layer is not installed.
    pub validation: bool,
}

/// Validation warnings and errors seen since the instance was created.
#[derive(Debug, Default)]
pub struct ValidationMessages {
    messages: Mutex<Vec<String>>,
    unknown_to_layer: Mutex<Vec<String>>,
}

/// What a layer older than an extension the crate enables says of it: it does not know the
/// extension's name or its feature structure (`VK_KHR_shader_bfloat16`, structure type
/// 1000141000, is newer than the layer 1.4.309 that Debian's and lavapipe's sysroots carry, and
/// the H200's driver offers it). The layer can check nothing about such an extension, so these
/// say nothing about the crate's use of Vulkan.
const UNKNOWN_TO_LAYER: [&str; 2] = [
    "VK_KHR_shader_bfloat16 is not a known extension string",
    "unknown VkStructureType (1000141000)",
];

impl ValidationMessages {
    /// How many warnings and errors were reported.
    pub fn count(&self) -> usize {
        lock(&self.messages).len()
    }

    /// The messages (warnings and errors), oldest first, without
    /// [`ValidationMessages::unknown_to_layer`]'s.
    pub fn messages(&self) -> Vec<String> {
        lock(&self.messages).clone()
    }

    /// The messages of a layer older than an extension the crate enabled, saying only that it
    /// does not know the extension (its name, its feature structure): kept apart from
    /// [`ValidationMessages::messages`], since they report the layer's age, not a misuse.
    pub fn unknown_to_layer(&self) -> Vec<String> {
        lock(&self.unknown_to_layer).clone()
    }

    fn push(&self, message: String) {
        let list = if UNKNOWN_TO_LAYER.iter().any(|m| message.contains(m)) {
            &self.unknown_to_layer
        } else {
            &self.messages
        };
        lock(list).push(message);
    }
}

fn lock(list: &Mutex<Vec<String>>) -> std::sync::MutexGuard<'_, Vec<String>> {
    // A panic while holding this lock cannot leave the Vec inconsistent.
    list.lock().unwrap_or_else(|e| e.into_inner())
}

/// An owned `VkInstance` (+ debug messenger). Dropped last: devices hold an `Arc` of it.
pub struct Instance {
    entry: ash::Entry,
    raw: ash::Instance,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    /// Also the debug callback's user data: the Arc keeps it at one address while the messenger lives.
    messages: Arc<ValidationMessages>,
    cooperative_matrix: ash::khr::cooperative_matrix::Instance,
    /// False for an instance the caller created ([`Instance::adopt`]): never destroyed here.
    owned: bool,
}

impl Instance {
    /// Loads Vulkan and creates a Vulkan 1.3 instance.
    pub fn new(options: &InstanceOptions) -> Result<Arc<Self>> {
        let validation = options.validation || env_flag("VK_SGMAT_VALIDATION");
        // SAFETY: loading the system's Vulkan loader runs its initialisers; nothing else is known
        // to conflict with that.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| Error::NoVulkan(e.to_string()))?;
        let mut layers = Vec::new();
        let mut extensions = Vec::new();
        if validation {
            // SAFETY: a plain query on a loaded entry.
            let available = unsafe { entry.enumerate_instance_layer_properties() }
                .map_err(|r| Error::vk("vkEnumerateInstanceLayerProperties", r))?;
            let found = available
                .iter()
                .any(|l| l.layer_name_as_c_str().is_ok_and(|n| n == VALIDATION_LAYER));
            if !found {
                return Err(Error::ValidationLayerMissing);
            }
            layers.push(VALIDATION_LAYER.as_ptr());
            extensions.push(ash::ext::debug_utils::NAME.as_ptr());
        }
        let app = vk::ApplicationInfo::default()
            .application_name(c"vk-sgmat")
            .engine_name(c"vk-sgmat")
            .api_version(vk::API_VERSION_1_3);
        let info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layers)
            .enabled_extension_names(&extensions);
        // SAFETY: every pointer in `info` outlives the call.
        let raw = unsafe { entry.create_instance(&info, None) }.map_err(|r| Error::vk("vkCreateInstance", r))?;
        let messages = Arc::new(ValidationMessages::default());
        let mut instance = Self {
            cooperative_matrix: ash::khr::cooperative_matrix::Instance::new(&entry, &raw),
            entry,
            raw,
            debug: None,
            messages,
            owned: true,
        };
        if validation {
            let loader = ash::ext::debug_utils::Instance::new(&instance.entry, &instance.raw);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::WARNING | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                )
                .pfn_user_callback(Some(debug_callback))
                .user_data(Arc::as_ptr(&instance.messages) as *mut c_void);
            // SAFETY: `messages` lives in the instance, which destroys the messenger before dropping it.
            let messenger = unsafe { loader.create_debug_utils_messenger(&info, None) }
                .map_err(|r| Error::vk("vkCreateDebugUtilsMessengerEXT", r))?;
            instance.debug = Some((loader, messenger));
        }
        Ok(Arc::new(instance))
    }

    /// Wraps an instance the caller created (Vulkan 1.3 or later). vk-sgmat never destroys it.
    ///
    /// # Safety
    /// `entry` and `raw` must be valid, and the instance must outlive every object made from
    /// the returned one.
    pub unsafe fn adopt(entry: ash::Entry, raw: ash::Instance) -> Arc<Self> {
        Arc::new(Self {
            cooperative_matrix: ash::khr::cooperative_matrix::Instance::new(&entry, &raw),
            entry,
            raw,
            debug: None,
            messages: Arc::new(ValidationMessages::default()),
            owned: false,
        })
    }

    /// The ash instance.
    pub fn raw(&self) -> &ash::Instance {
        &self.raw
    }

    /// The ash entry.
    pub fn entry(&self) -> &ash::Entry {
        &self.entry
    }

    /// Whether the validation layer is on.
    pub fn validation_enabled(&self) -> bool {
        self.debug.is_some()
    }

    /// Validation messages recorded so far (empty without validation).
    pub fn validation_messages(&self) -> &Arc<ValidationMessages> {
        &self.messages
    }

    /// The cooperative-matrix query, fetched as an instance-level function (Mali and Intel drivers
    /// fail when it is fetched through vkGetDeviceProcAddr; Dawn commit b0f334b0).
    pub(crate) fn cooperative_matrix(&self) -> &ash::khr::cooperative_matrix::Instance {
        &self.cooperative_matrix
    }

    /// The device groups the driver reports (`vkEnumeratePhysicalDeviceGroups`): each group's
    /// devices as indices into [`Instance::devices`]. Devices of one group can share memory and
    /// work as one logical device; a machine's separate GPUs are usually each a group of one.
    pub fn device_groups(&self) -> Result<Vec<Vec<usize>>> {
        // SAFETY: plain queries on a live instance; the output array is sized by the first.
        let (pdevs, groups) = unsafe {
            let pdevs = self
                .raw
                .enumerate_physical_devices()
                .map_err(|r| Error::vk("vkEnumeratePhysicalDevices", r))?;
            let len = self
                .raw
                .enumerate_physical_device_groups_len()
                .map_err(|r| Error::vk("vkEnumeratePhysicalDeviceGroups", r))?;
            let mut groups = vec![vk::PhysicalDeviceGroupProperties::default(); len];
            self.raw
                .enumerate_physical_device_groups(&mut groups)
                .map_err(|r| Error::vk("vkEnumeratePhysicalDeviceGroups", r))?;
            (pdevs, groups)
        };
        Ok(groups
            .iter()
            .map(|g| {
                let members = &g.physical_devices[..(g.physical_device_count as usize).min(vk::MAX_DEVICE_GROUP_SIZE)];
                members
                    .iter()
                    .filter_map(|m| pdevs.iter().position(|p| p == m))
                    .collect()
            })
            .collect())
    }

    /// Queries every physical device, in enumeration order.
    pub fn devices(&self) -> Result<Vec<(vk::PhysicalDevice, DeviceInfo)>> {
        // SAFETY: a plain query on a live instance.
        let pdevs =
            unsafe { self.raw.enumerate_physical_devices() }.map_err(|r| Error::vk("vkEnumeratePhysicalDevices", r))?;
        pdevs
            .into_iter()
            .enumerate()
            .map(|(i, p)| Ok((p, query_device(self, p, i)?)))
            .collect()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        // SAFETY: devices hold an Arc<Instance>, so none is alive; the messenger goes first.
        unsafe {
            if let Some((loader, messenger)) = self.debug.take() {
                loader.destroy_debug_utils_messenger(messenger, None);
            }
            self.raw.destroy_instance(None);
        }
    }
}

pub(crate) fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

unsafe extern "system" fn debug_callback(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes a valid callback-data pointer for the duration of the call, and
    // `user` points at the instance's ValidationMessages, alive until the messenger is destroyed.
    unsafe {
        let text = if data.is_null() || (*data).p_message.is_null() {
            "(no message)".to_string()
        } else {
            CStr::from_ptr((*data).p_message).to_string_lossy().into_owned()
        };
        let line = format!("[{severity:?}] {text}");
        if env_flag("VK_SGMAT_PRINT_VALIDATION") {
            eprintln!("vk-sgmat validation: {line}");
        }
        if let Some(messages) = (user as *const ValidationMessages).as_ref() {
            messages.push(line);
        }
    }
    vk::FALSE
}

#[cfg(test)]
mod tests {
    use super::ValidationMessages;

    #[test]
    fn only_a_layer_not_knowing_the_extension_is_kept_apart() {
        let m = ValidationMessages::default();
        m.push("[ERROR] vkCreateDevice(): pCreateInfo->pNext chain includes a structure with unknown VkStructureType (1000141000). This error is based on".into());
        m.push("[WARNING] vkCreateDevice(): pCreateInfo->ppEnabledExtensionNames[2] VK_KHR_shader_bfloat16 is not a known extension string.".into());
        // A real misuse that names the same extension still counts.
        m.push("[ERROR] vkCreateShaderModule(): SPIR-V uses BFloat16TypeKHR but VK_KHR_shader_bfloat16 shaderBFloat16Type was not enabled".into());
        m.push("[ERROR] unknown VkStructureType (1000141001)".into());
        assert_eq!(m.unknown_to_layer().len(), 2);
        assert_eq!(m.count(), 2);
        assert!(m.messages()[0].contains("shaderBFloat16Type was not enabled"));
        assert!(m.messages()[1].contains("1000141001"));
    }
}
