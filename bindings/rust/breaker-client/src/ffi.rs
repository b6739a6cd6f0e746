//! The C API of client/c_api.h, declared by hand (Debian's bindgen is not needed for one
//! header). Each item matches the header's; the header documents ownership and threads.

#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_double, c_int, c_void};

pub const BREAKER_OK: c_int = 0;
/// BREAKER_ABI_VERSION of the header these declarations follow.
pub const BREAKER_ABI_VERSION: c_int = 1;

#[repr(C)]
pub struct breaker_error {
    pub size: usize,
    pub code: c_int,
    pub message: [c_char; 256],
}

#[repr(C)]
pub struct breaker_options {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct breaker_client {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct breaker_policy {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct breaker_policy_info {
    pub size: usize,
    pub fleet_version: u64,
    pub mode: c_int,
    pub source: c_int,
    pub n_banned_builders: usize,
    pub n_trusted_builders: usize,
    pub n_banned_relays: usize,
    pub n_trusted_relays: usize,
}

#[repr(C)]
pub struct breaker_stats {
    pub size: usize,
    pub connected: bool,
    pub reconnects: u64,
    pub reported: u64,
    pub acknowledged: u64,
    pub buffered: u64,
    pub dropped_bids: u64,
    pub dropped_other: u64,
    pub dropped_failures: u64,
    pub refused: u64,
    pub fleet_policy_version: u64,
    pub source: c_int,
    pub fallback_active: bool,
    pub replayed: u64,
    pub sequence_exhausted: bool,
    pub address: [c_char; 256],
    pub last_refusal: [c_char; 256],
}

pub type breaker_log_callback = unsafe extern "C" fn(user_data: *mut c_void, level: c_int, message: *const c_char);

pub type breaker_policy_callback =
    unsafe extern "C" fn(user_data: *mut c_void, fleet_version: u64, mode: c_int, source: c_int);

impl breaker_error {
    pub fn new() -> breaker_error {
        breaker_error { size: std::mem::size_of::<breaker_error>(), code: 0, message: [0; 256] }
    }
}

impl breaker_policy_info {
    pub fn new() -> breaker_policy_info {
        breaker_policy_info {
            size: std::mem::size_of::<breaker_policy_info>(),
            fleet_version: 0,
            mode: 0,
            source: 0,
            n_banned_builders: 0,
            n_trusted_builders: 0,
            n_banned_relays: 0,
            n_trusted_relays: 0,
        }
    }
}

impl breaker_stats {
    pub fn new() -> breaker_stats {
        // SAFETY: plain data, for which all-zero bytes are valid values.
        let mut s: breaker_stats = unsafe { std::mem::zeroed() };
        s.size = std::mem::size_of::<breaker_stats>();
        s
    }
}

extern "C" {
    pub fn breaker_abi_version() -> c_int;
    pub fn breaker_last_error(out: *mut breaker_error) -> c_int;

    pub fn breaker_options_new() -> *mut breaker_options;
    pub fn breaker_options_free(opts: *mut breaker_options);
    pub fn breaker_options_add_address(opts: *mut breaker_options, address: *const c_char) -> c_int;
    pub fn breaker_options_set_tls(
        opts: *mut breaker_options,
        ca_file: *const c_char,
        cert_file: *const c_char,
        key_file: *const c_char,
    ) -> c_int;
    pub fn breaker_options_set_bearer_token(opts: *mut breaker_options, token: *const c_char) -> c_int;
    pub fn breaker_options_set_node_id(opts: *mut breaker_options, node_id: *const c_char) -> c_int;
    pub fn breaker_options_set_network(opts: *mut breaker_options, network: *const c_char) -> c_int;
    pub fn breaker_options_set_client_version(opts: *mut breaker_options, version: *const c_char) -> c_int;
    pub fn breaker_options_set_max_buffered_observations(opts: *mut breaker_options, max: usize) -> c_int;
    pub fn breaker_options_set_staleness_limit_seconds(opts: *mut breaker_options, seconds: c_double) -> c_int;
    pub fn breaker_options_set_log_callback(
        opts: *mut breaker_options,
        callback: Option<breaker_log_callback>,
        user_data: *mut c_void,
    ) -> c_int;
    pub fn breaker_options_set_fallback_config_file(opts: *mut breaker_options, path: *const c_char) -> c_int;

    pub fn breaker_client_new(
        opts: *const breaker_options,
        out: *mut *mut breaker_client,
        err: *mut breaker_error,
    ) -> c_int;
    pub fn breaker_client_free(client: *mut breaker_client);

    pub fn breaker_report_bid(
        client: *mut breaker_client,
        slot: u64,
        builder: u64,
        relay_or_null: *const c_char,
        pubkey: *const u8,
        pubkey_len: usize,
    ) -> c_int;
    pub fn breaker_report_payload_missing(
        client: *mut breaker_client,
        slot: u64,
        builder: u64,
        root: *const u8,
        attested_fraction: c_double,
    ) -> c_int;
    pub fn breaker_report_payload_delivered(client: *mut breaker_client, slot: u64, builder: u64, root: *const u8) -> c_int;
    pub fn breaker_report_blocks_seen(client: *mut breaker_client, slot: u64, roots: *const u8, n_roots: usize) -> c_int;
    pub fn breaker_report_finalized(client: *mut breaker_client, slot: u64, epoch: u64) -> c_int;
    pub fn breaker_report_builder_exited(client: *mut breaker_client, slot: u64, builder: u64) -> c_int;
    pub fn breaker_report_relay_reveal_missing(
        client: *mut breaker_client,
        slot: u64,
        relay: *const c_char,
        root: *const u8,
    ) -> c_int;

    pub fn breaker_is_relay_allowed(client: *const breaker_client, relay: *const c_char) -> bool;
    pub fn breaker_is_allowed(client: *const breaker_client, builder: u64, relay_or_null: *const c_char) -> bool;

    pub fn breaker_policy_get(client: *const breaker_client) -> *mut breaker_policy;
    pub fn breaker_policy_free(policy: *mut breaker_policy);
    pub fn breaker_policy_is_current(client: *const breaker_client, policy: *const breaker_policy) -> bool;
    pub fn breaker_policy_read(policy: *const breaker_policy, out: *mut breaker_policy_info) -> c_int;
    pub fn breaker_policy_banned_builders(policy: *const breaker_policy, out: *mut u64, cap: usize) -> usize;
    pub fn breaker_policy_trusted_builders(policy: *const breaker_policy, out: *mut u64, cap: usize) -> usize;
    pub fn breaker_policy_banned_relay(policy: *const breaker_policy, index: usize) -> *const c_char;
    pub fn breaker_policy_trusted_relay(policy: *const breaker_policy, index: usize) -> *const c_char;
    pub fn breaker_policy_mode_reason(policy: *const breaker_policy) -> *const c_char;

    pub fn breaker_subscribe(
        client: *mut breaker_client,
        callback: breaker_policy_callback,
        user_data: *mut c_void,
        subscription_id: *mut c_int,
    ) -> c_int;
    pub fn breaker_unsubscribe(client: *mut breaker_client, subscription_id: c_int);

    pub fn breaker_get_stats(client: *const breaker_client, out: *mut breaker_stats) -> c_int;
    pub fn breaker_is_synced(client: *const breaker_client) -> bool;
}

/// The declarations above against the C compiler's layout of the header (the lines
/// //client:c_api_layout prints, in the file BREAKER_C_LAYOUT names): every size and offset the
/// same, and no field of either missing from the other.
#[cfg(test)]
mod layout_test {
    use super::*;
    use std::collections::BTreeMap;
    use std::mem::{size_of, MaybeUninit};
    use std::ptr::addr_of;

    macro_rules! layout {
        ($map:ident, $t:ident { $($field:ident),* }) => {{
            $map.insert(stringify!($t).to_string(), size_of::<$t>());
            let value = MaybeUninit::<$t>::uninit();
            let base = value.as_ptr();
            // SAFETY: addresses only: nothing uninitialized is read.
            $( $map.insert(format!("{}.{}", stringify!($t), stringify!($field)),
                           unsafe { addr_of!((*base).$field) } as usize - base as usize); )*
        }};
    }

    #[test]
    fn layout_matches_c() {
        let path = match std::env::var("BREAKER_C_LAYOUT") {
            Ok(path) => path,
            Err(_) => {
                eprintln!("BREAKER_C_LAYOUT is not set: run //bindings:rust_test, which prints the C layout");
                return;
            }
        };
        let text = std::fs::read_to_string(&path).expect("BREAKER_C_LAYOUT is readable");
        let c: BTreeMap<String, usize> = text
            .lines()
            .map(|line| {
                let (name, n) = line.split_once(' ').expect("a line is '<name> <bytes>'");
                (name.to_string(), n.parse().expect("a number of bytes"))
            })
            .collect();
        let mut rust = BTreeMap::new();
        layout!(rust, breaker_error { size, code, message });
        layout!(rust, breaker_policy_info {
            size, fleet_version, mode, source, n_banned_builders, n_trusted_builders, n_banned_relays, n_trusted_relays
        });
        layout!(rust, breaker_stats {
            size, connected, reconnects, reported, acknowledged, buffered, dropped_bids, dropped_other,
            dropped_failures, refused, fleet_policy_version, source, fallback_active, replayed,
            sequence_exhausted, address, last_refusal
        });
        assert_eq!(rust, c, "Rust's layout (left) differs from C's (right)");
    }
}
