//! The C API of client/c_api.h, declared by hand (Debian's bindgen is not needed for one
//! header). Each item matches the header's; the header documents ownership and threads.

#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_double, c_int, c_void};

pub const BREAKER_OK: c_int = 0;

#[repr(C)]
pub struct breaker_error {
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
#[derive(Default)]
pub struct breaker_policy_info {
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
}

pub type breaker_policy_callback =
    unsafe extern "C" fn(user_data: *mut c_void, fleet_version: u64, mode: c_int, source: c_int);

extern "C" {
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

    pub fn breaker_get_stats(client: *const breaker_client, out: *mut breaker_stats);
}
