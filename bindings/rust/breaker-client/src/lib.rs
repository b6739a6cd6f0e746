//! A beacon node's link to breakerd, the staking pool's shared builder circuit breaker, over
//! the C API of the breaker client library (`client/c_api.h`, `libbreaker_client.so`).
//!
//! A node starts one [`Client`], reports what it sees with the `observe_*` methods, asks
//! [`Client::is_allowed`] (or reads [`Client::policy`]) before it takes a builder's bid, and
//! may [`Client::subscribe`] to policy changes. None of these waits for the network:
//! observations are buffered and streamed by the library's own threads, and the policy is
//! read from an immutable snapshot. When breakerd is unreachable the last fleet policy stays
//! in force (fail-static); the library reconnects by itself.
//!
//! Each `observe_*` method refuses at the call, queuing nothing, what breakerd would refuse for
//! its shape, with breakerd's code and message ([`Stats::last_refusal`] keeps it too):
//! [`Code::InvalidArgument`] for a relay that does not normalize (`ftp://x`, more than 512
//! bytes), a key neither empty nor 48 bytes, more than 64 roots, the self-build index where a
//! builder is needed, a fraction outside 0..=1, a finalized epoch after the slot's;
//! [`Code::OutOfRange`] for a slot outside the window as the library's clock sees it: more
//! than 2 slots ahead of the current slot, or more than 64 behind (breakerd's
//! `max_future_slots` and `amendment_window_slots`, from its configuration once connected).
//! breakerd judges the window again by its own clock: with the two clocks apart, an
//! observation near an edge may pass here and be refused there ([`Stats::refused`] counts
//! those, `last_refusal` says why).
//!
//! Memory is the crate's: C strings and snapshots are freed by it, and C keeps no pointer
//! into Rust memory except a subscription's callback, which [`Subscription`] owns.

mod ffi;

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

/// The builder index of the proposer's own payload: always allowed.
pub const SELF_BUILDER: u64 = u64::MAX;

/// A beacon block root.
pub type Root = [u8; 32];

/// A refusal of the library: the canonical gRPC/absl status code, and a message naming what
/// was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub code: Code,
    pub message: String,
}

/// The codes the C API returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    InvalidArgument,
    NotFound,
    FailedPrecondition,
    /// The client's state is not what the call needs (e.g. not in sync in time).
    DeadlineExceeded,
    /// A slot outside the window as the library's clock sees it.
    OutOfRange,
    Other(i32),
}

impl Code {
    fn from_c(code: c_int) -> Code {
        match code {
            3 => Code::InvalidArgument,
            4 => Code::DeadlineExceeded,
            5 => Code::NotFound,
            9 => Code::FailedPrecondition,
            11 => Code::OutOfRange,
            other => Code::Other(other),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "breaker: {:?}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

impl Error {
    fn invalid(message: String) -> Error {
        Error { code: Code::InvalidArgument, message }
    }

    fn from_c(code: c_int, err: &ffi::breaker_error) -> Error {
        // SAFETY: the library NUL-terminates `message` (truncated to fit).
        let message = unsafe { CStr::from_ptr(err.message.as_ptr()) };
        Error { code: Code::from_c(code), message: message.to_string_lossy().into_owned() }
    }

    /// The error the calling thread's last C call recorded.
    fn last(code: c_int) -> Error {
        let mut err = ffi::breaker_error::new();
        // SAFETY: `err` is ours for the call.
        unsafe { ffi::breaker_last_error(&mut err) };
        Error::from_c(code, &err)
    }
}

/// Turns a code into a Result, reading the message on this thread, which made the call.
fn check(code: c_int) -> Result<(), Error> {
    if code == ffi::BREAKER_OK {
        Ok(())
    } else {
        Err(Error::last(code))
    }
}

fn c_string(what: &str, s: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error::invalid(format!("{what} contains a NUL byte; remove it")))
}

/// `s` for C, None for "" (C's NULL).
fn optional_c_string(what: &str, s: &str) -> Result<Option<CString>, Error> {
    if s.is_empty() {
        Ok(None)
    } else {
        c_string(what, s).map(Some)
    }
}

fn ptr_or_null(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |s| s.as_ptr())
}

/// The PEM files of a TLS connection to breakerd.
#[derive(Clone, Debug, Default)]
pub struct Tls {
    /// The CA certificates breakerd's certificate must chain to; "" for the system's roots.
    pub ca_file: String,
    /// This node's certificate and key for mutual TLS; both "" for none.
    pub cert_file: String,
    pub key_file: String,
}

/// The level of a line the library logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// What goes as expected: connected, a failed connection attempt (repeated while breakerd
    /// is away).
    Info,
    /// What an operator should know: a stream that ended, an observation breakerd refused,
    /// the local engine's policy taking part.
    Warning,
    /// What needs an operator: breakerd sent what this client cannot use, sequence numbers
    /// ran out.
    Error,
}

impl LogLevel {
    fn from_c(level: c_int) -> LogLevel {
        match level {
            0 => LogLevel::Info,
            1 => LogLevel::Warning,
            _ => LogLevel::Error,
        }
    }
}

/// Where the library's log lines go (see [`Options::log`]): a function of the caller's, or,
/// with the `log` feature, the `log` facade.
#[derive(Clone)]
pub struct LogSink(Arc<dyn Fn(LogLevel, &str) + Send + Sync>);

impl LogSink {
    /// Every line to `f`.
    pub fn new(f: impl Fn(LogLevel, &str) + Send + Sync + 'static) -> LogSink {
        LogSink(Arc::new(f))
    }

    /// Every line to the `log` facade, target "breaker_client", at the level of the same name.
    #[cfg(feature = "log")]
    pub fn facade() -> LogSink {
        LogSink::new(|level, message| {
            let level = match level {
                LogLevel::Info => log::Level::Info,
                LogLevel::Warning => log::Level::Warn,
                LogLevel::Error => log::Level::Error,
            };
            log::log!(target: "breaker_client", level, "{message}");
        })
    }
}

impl fmt::Debug for LogSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LogSink")
    }
}

/// How to reach breakerd and who this node is.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// breakerd's addresses, "host:port", every replica's; tried in turn. Required.
    pub addresses: Vec<String>,
    /// This node's stable id in the fleet: 1..128 printable ASCII characters. Required.
    pub node_id: String,
    /// The network the node follows; breakerd refuses a node of another. "": not checked.
    pub network: String,
    /// Reported to breakerd; "": the library's.
    pub client_version: String,
    /// Sent as `authorization: Bearer <token>`; "": none.
    pub bearer_token: String,
    /// None: plaintext (loopback or a private network only).
    pub tls: Option<Tls>,
    /// Observations kept until breakerd acknowledges them; None: the library's (65536).
    pub max_buffered_observations: Option<usize>,
    /// How long breakerd may be unreachable before the local engine's policy applies too;
    /// None: two epochs of the chain.
    pub staleness_limit: Option<Duration>,
    /// A breakerd configuration file for the local engine until breakerd sends its own.
    pub fallback_config_file: String,
    /// Receives every line the library logs, at every level, and nothing goes to stderr. It is
    /// called on a thread of the library's own, one line at a time, in order, with no lock of
    /// the library held (it may call the client); a slow one delays only later lines. None:
    /// the library writes its warnings and errors to stderr ("breaker-client: WARNING: ..."),
    /// and nothing else.
    pub log: Option<LogSink>,
}

/// Owns a breaker_options for the duration of Client::new.
struct COptions(*mut ffi::breaker_options);

impl Drop for COptions {
    fn drop(&mut self) {
        // SAFETY: allocated by breaker_options_new, used by this thread only.
        unsafe { ffi::breaker_options_free(self.0) }
    }
}

impl Options {
    fn to_c(&self) -> Result<COptions, Error> {
        // SAFETY: breaker_options_new has no precondition; NULL only when out of memory.
        let o = COptions(unsafe { ffi::breaker_options_new() });
        if o.0.is_null() {
            return Err(Error { code: Code::Other(8), message: "out of memory allocating options".into() });
        }
        let set_string = |what: &str, s: &str, f: unsafe extern "C" fn(*mut ffi::breaker_options, *const c_char) -> c_int| {
            let s = c_string(what, s)?;
            // SAFETY: `o` is live; C copies `s` before returning.
            check(unsafe { f(o.0, s.as_ptr()) })
        };
        for address in &self.addresses {
            set_string("address", address, ffi::breaker_options_add_address)?;
        }
        set_string("node_id", &self.node_id, ffi::breaker_options_set_node_id)?;
        set_string("network", &self.network, ffi::breaker_options_set_network)?;
        if !self.client_version.is_empty() {
            set_string("client_version", &self.client_version, ffi::breaker_options_set_client_version)?;
        }
        set_string("bearer_token", &self.bearer_token, ffi::breaker_options_set_bearer_token)?;
        set_string("fallback_config_file", &self.fallback_config_file, ffi::breaker_options_set_fallback_config_file)?;
        if let Some(tls) = &self.tls {
            let (ca, cert, key) = (c_string("ca_file", &tls.ca_file)?, c_string("cert_file", &tls.cert_file)?, c_string("key_file", &tls.key_file)?);
            // SAFETY: as above.
            check(unsafe { ffi::breaker_options_set_tls(o.0, ca.as_ptr(), cert.as_ptr(), key.as_ptr()) })?;
        }
        if let Some(max) = self.max_buffered_observations {
            // SAFETY: as above.
            check(unsafe { ffi::breaker_options_set_max_buffered_observations(o.0, max) })?;
        }
        if let Some(limit) = self.staleness_limit {
            // SAFETY: as above.
            check(unsafe { ffi::breaker_options_set_staleness_limit_seconds(o.0, limit.as_secs_f64()) })?;
        }
        Ok(o)
    }
}

/// The fleet's fallback mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Bids from every builder that is not banned.
    AllBuilders,
    /// Only bids from trusted builders or through trusted relays.
    TrustedOnly,
    /// No bid: the proposer builds its own payload.
    SelfBuild,
}

impl Mode {
    fn from_c(mode: c_int) -> Mode {
        match mode {
            1 => Mode::AllBuilders,
            2 => Mode::TrustedOnly,
            // A mode this crate does not know (a newer library's): the strictest.
            _ => Mode::SelfBuild,
        }
    }
}

/// Where the policy in force comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The fleet's policy, from breakerd.
    Fleet,
    /// The stricter of the last fleet policy and the local engine's.
    FleetAndLocal,
    /// No fleet policy yet: the local engine's.
    Local,
}

impl Source {
    fn from_c(source: c_int) -> Source {
        match source {
            1 => Source::Fleet,
            2 => Source::FleetAndLocal,
            _ => Source::Local,
        }
    }
}

/// One policy in force, as plain values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// The fleet policy's version; 0 before any arrived. It goes up with every change.
    pub version: u64,
    pub mode: Mode,
    /// Why the mode is what it is; empty for AllBuilders.
    pub mode_reason: String,
    pub source: Source,
    /// Builder indices banned, and trusted, in increasing order.
    pub banned_builders: Vec<u64>,
    pub trusted_builders: Vec<u64>,
    /// Normalized relay identifiers banned, and trusted, in increasing byte order.
    pub banned_relays: Vec<String>,
    pub trusted_relays: Vec<String>,
}

impl Policy {
    /// Whether the policy bans `builder`.
    pub fn bans(&self, builder: u64) -> bool {
        self.banned_builders.binary_search(&builder).is_ok()
    }
}

/// The client's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// A stream to breakerd is up, at `address` (the current or last one).
    pub connected: bool,
    pub address: String,
    pub reconnects: u64,
    pub reported: u64,
    pub acknowledged: u64,
    pub buffered: u64,
    pub dropped_bids: u64,
    pub dropped_other: u64,
    pub dropped_failures: u64,
    pub refused: u64,
    /// Acknowledged as replays: sent again after a reconnect.
    pub replayed: u64,
    /// breakerd handled the node's last sequence number: run `breakerctl reset --node=ID`.
    pub sequence_exhausted: bool,
    pub fleet_policy_version: u64,
    pub source: Source,
    /// The local engine takes part in the policy in force: alert on it.
    pub fallback_active: bool,
    /// Why the last observation refused was refused: at the call (the error the call returned)
    /// or by breakerd ("breakerd refused observation N: ..."); "" when none was.
    pub last_refusal: String,
}

/// A held C snapshot and its conversion. The snapshot is immutable and refers to no client,
/// so it may be read and freed from any thread.
struct Held {
    snapshot: *mut ffi::breaker_policy,
    policy: Arc<Policy>,
}

// SAFETY: see Held: every function of the C API may read a breaker_policy from any thread.
unsafe impl Send for Held {}
unsafe impl Sync for Held {}

impl Held {
    fn read(client: *const ffi::breaker_client) -> Held {
        // SAFETY: `client` is live (the caller's borrow of Client).
        let snapshot = unsafe { ffi::breaker_policy_get(client) };
        let mut info = ffi::breaker_policy_info::new();
        // SAFETY: `snapshot` is live until Held drops; the lists are copied out.
        unsafe {
            ffi::breaker_policy_read(snapshot, &mut info);
            let builders = |n: usize, f: unsafe extern "C" fn(*const ffi::breaker_policy, *mut u64, usize) -> usize| {
                let mut out = vec![0u64; n];
                f(snapshot, out.as_mut_ptr(), n);
                out
            };
            let relays = |n: usize, f: unsafe extern "C" fn(*const ffi::breaker_policy, usize) -> *const c_char| {
                (0..n).map(|i| CStr::from_ptr(f(snapshot, i)).to_string_lossy().into_owned()).collect()
            };
            let policy = Policy {
                version: info.fleet_version,
                mode: Mode::from_c(info.mode),
                mode_reason: CStr::from_ptr(ffi::breaker_policy_mode_reason(snapshot)).to_string_lossy().into_owned(),
                source: Source::from_c(info.source),
                banned_builders: builders(info.n_banned_builders, ffi::breaker_policy_banned_builders),
                trusted_builders: builders(info.n_trusted_builders, ffi::breaker_policy_trusted_builders),
                banned_relays: relays(info.n_banned_relays, ffi::breaker_policy_banned_relay),
                trusted_relays: relays(info.n_trusted_relays, ffi::breaker_policy_trusted_relay),
            };
            Held { snapshot, policy: Arc::new(policy) }
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: allocated by breaker_policy_get; nobody else holds it.
        unsafe { ffi::breaker_policy_free(self.snapshot) }
    }
}

/// A running client of breakerd.
///
/// `Client` is `Send` and `Sync`: every function of the C API may be called from any thread
/// concurrently, except `breaker_client_free`, which `Drop` calls with the exclusive access
/// ownership gives (no borrow, hence no other call, is left; a [`Subscription`] or a
/// [`PolicyWatch`] holds an `Arc` of the client, so none is left either). Do not drop the last
/// `Arc<Client>`, a `Subscription` or a `PolicyWatch` inside a policy callback: the library
/// would be freed from its own thread.
pub struct Client {
    raw: *mut ffi::breaker_client,
    held: RwLock<Held>,
    // The library calls it until breaker_client_free returns: dropped after it.
    log: Option<Box<LogSink>>,
}

// SAFETY: see Client.
unsafe impl Send for Client {}
unsafe impl Sync for Client {}

impl Client {
    /// Starts a client. It does not wait for breakerd: the library connects in the background
    /// and keeps reconnecting until the client drops ([`Client::wait_synced`] waits). Returns
    /// an [`Error`] naming a missing or invalid option, or an unreadable file.
    pub fn new(options: &Options) -> Result<Client, Error> {
        if options.addresses.is_empty() {
            return Err(Error::invalid("Options.addresses is empty; give breakerd's address, host:port".into()));
        }
        // SAFETY: no precondition.
        let abi = unsafe { ffi::breaker_abi_version() };
        if abi != ffi::BREAKER_ABI_VERSION {
            return Err(Error {
                code: Code::FailedPrecondition,
                message: format!(
                    "libbreaker_client.so has ABI version {abi}; this crate was written for {}: load the library of the same release",
                    ffi::BREAKER_ABI_VERSION
                ),
            });
        }
        let o = options.to_c()?;
        // Owned by the client, freed once the library's threads have ended (Drop).
        let log = options.log.clone().map(Box::new);
        if let Some(sink) = &log {
            let user_data = &**sink as *const LogSink as *mut c_void;
            // SAFETY: `o` is live; `user_data` outlives the client's threads (see above).
            check(unsafe { ffi::breaker_options_set_log_callback(o.0, Some(log_trampoline), user_data) })?;
        }
        let mut raw = ptr::null_mut();
        let mut err = ffi::breaker_error::new();
        // SAFETY: `o` is live; `raw` and `err` are ours.
        let code = unsafe { ffi::breaker_client_new(o.0, &mut raw, &mut err) };
        if code != ffi::BREAKER_OK {
            return Err(Error::from_c(code, &err));
        }
        let held = RwLock::new(Held::read(raw));
        Ok(Client { raw, held, log })
    }

    /// The policy in force, converted once per new policy and shared afterwards. Does not
    /// block on the network; readers wait for each other only while a new policy is converted.
    pub fn policy(&self) -> Arc<Policy> {
        {
            let held = self.held.read().unwrap_or_else(|e| e.into_inner());
            // SAFETY: both live for the call.
            if unsafe { ffi::breaker_policy_is_current(self.raw, held.snapshot) } {
                return Arc::clone(&held.policy);
            }
        }
        let mut held = self.held.write().unwrap_or_else(|e| e.into_inner());
        // SAFETY: as above.
        if !unsafe { ffi::breaker_policy_is_current(self.raw, held.snapshot) } {
            *held = Held::read(self.raw);
        }
        Arc::clone(&held.policy)
    }

    /// Whether the node may take a bid of `builder` received through `relay` (any spelling;
    /// "" for P2P). False for a relay that is no endpoint.
    pub fn is_allowed(&self, builder: u64, relay: &str) -> bool {
        let relay = match optional_c_string("relay", relay) {
            Ok(relay) => relay,
            Err(_) => return false,
        };
        // SAFETY: live client; C copies `relay`.
        unsafe { ffi::breaker_is_allowed(self.raw, builder, ptr_or_null(&relay)) }
    }

    /// Whether the node may take a header from `relay` (any spelling) whatever its builder:
    /// what a node asks before Gloas, when a header names no builder index. False when the
    /// relay is banned, the mode is SelfBuild, or the mode is TrustedOnly and the relay is not
    /// trusted; false for a relay that is no endpoint.
    pub fn is_relay_allowed(&self, relay: &str) -> bool {
        match CString::new(relay) {
            // SAFETY: live client; C copies `relay`.
            Ok(relay) => unsafe { ffi::breaker_is_relay_allowed(self.raw, relay.as_ptr()) },
            Err(_) => false,
        }
    }

    /// The client's counters.
    pub fn stats(&self) -> Stats {
        let mut s = ffi::breaker_stats::new();
        // SAFETY: live client, `s` is ours and sized.
        unsafe { ffi::breaker_get_stats(self.raw, &mut s) };
        Stats {
            connected: s.connected,
            // SAFETY: NUL-terminated by C.
            address: unsafe { CStr::from_ptr(s.address.as_ptr()) }.to_string_lossy().into_owned(),
            reconnects: s.reconnects,
            reported: s.reported,
            acknowledged: s.acknowledged,
            buffered: s.buffered,
            dropped_bids: s.dropped_bids,
            dropped_other: s.dropped_other,
            dropped_failures: s.dropped_failures,
            refused: s.refused,
            replayed: s.replayed,
            sequence_exhausted: s.sequence_exhausted,
            fleet_policy_version: s.fleet_policy_version,
            source: Source::from_c(s.source),
            fallback_active: s.fallback_active,
            // SAFETY: NUL-terminated by C.
            last_refusal: unsafe { CStr::from_ptr(s.last_refusal.as_ptr()) }.to_string_lossy().into_owned(),
        }
    }

    /// Whether the client is connected, breakerd has acknowledged every observation reported
    /// so far, and the policy in force is the fleet's (the library's one definition,
    /// `breaker_is_synced`). Does not block: a task polls it, or awaits its own timer.
    pub fn is_synced(&self) -> bool {
        // SAFETY: live client.
        unsafe { ffi::breaker_is_synced(self.raw) }
    }

    /// Waits at most `timeout` until the client is connected, breakerd has acknowledged every
    /// observation reported so far, and the policy in force is the fleet's. Otherwise returns
    /// a DeadlineExceeded error with the client's state.
    pub fn wait_synced(&self, timeout: Duration) -> Result<(), Error> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.is_synced() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let s = self.stats();
                return Err(Error {
                    code: Code::DeadlineExceeded,
                    message: format!(
                        "not in sync with breakerd within {timeout:?}: connected {} to {:?}, {} observations unacknowledged, policy from {:?}",
                        s.connected, s.address, s.buffered, s.source
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Reports that a bid of `builder` for `slot` reached the node through `relay` ("" for
    /// P2P); `pubkey` is the builder's 48-byte key, or empty when not known.
    pub fn observe_bid(&self, slot: u64, builder: u64, relay: &str, pubkey: &[u8]) -> Result<(), Error> {
        let relay = optional_c_string("relay", relay)?;
        let key = if pubkey.is_empty() { ptr::null() } else { pubkey.as_ptr() };
        // SAFETY: live client; C copies what it reads.
        check(unsafe { ffi::breaker_report_bid(self.raw, slot, builder, ptr_or_null(&relay), key, pubkey.len()) })
    }

    /// Reports that block `root`, whose bid names `builder`, got no payload though
    /// `attested_fraction` (0..=1) of the committee's weight attested it: the failed reveal
    /// that bans a builder.
    pub fn observe_payload_missing(&self, slot: u64, builder: u64, root: &Root, attested_fraction: f64) -> Result<(), Error> {
        // SAFETY: as above; `root` is 32 bytes.
        check(unsafe { ffi::breaker_report_payload_missing(self.raw, slot, builder, root.as_ptr(), attested_fraction) })
    }

    /// Reports that `builder` revealed the payload of block `root`.
    pub fn observe_payload_delivered(&self, slot: u64, builder: u64, root: &Root) -> Result<(), Error> {
        // SAFETY: as above.
        check(unsafe { ffi::breaker_report_payload_delivered(self.raw, slot, builder, root.as_ptr()) })
    }

    /// Reports the blocks the node has for `slot` (at most 64), canonical or not.
    pub fn observe_blocks_seen(&self, slot: u64, roots: &[Root]) -> Result<(), Error> {
        let first = if roots.is_empty() { ptr::null() } else { roots.as_ptr() as *const u8 };
        // SAFETY: `roots` is contiguous 32-byte arrays, as C reads them.
        check(unsafe { ffi::breaker_report_blocks_seen(self.raw, slot, first, roots.len()) })
    }

    /// Reports the node's latest finalized epoch, as of `slot`.
    pub fn observe_finalized(&self, slot: u64, epoch: u64) -> Result<(), Error> {
        // SAFETY: live client.
        check(unsafe { ffi::breaker_report_finalized(self.raw, slot, epoch) })
    }

    /// Reports that `builder` exited.
    pub fn observe_builder_exited(&self, slot: u64, builder: u64) -> Result<(), Error> {
        // SAFETY: live client.
        check(unsafe { ffi::breaker_report_builder_exited(self.raw, slot, builder) })
    }

    /// Reports (before Gloas) that `relay` signed the header of block `root` and did not
    /// reveal its payload: the failed reveal that bans a relay.
    pub fn observe_relay_reveal_missing(&self, slot: u64, relay: &str, root: &Root) -> Result<(), Error> {
        let relay = c_string("relay", relay)?;
        // SAFETY: as above.
        check(unsafe { ffi::breaker_report_relay_reveal_missing(self.raw, slot, relay.as_ptr(), root.as_ptr()) })
    }

    /// Calls `callback` with every new policy in force until the returned [`Subscription`]
    /// drops. The subscription owns a handle of the client (it is `Send + Sync + 'static`: a
    /// task holds it across `.await`, a struct beside its `Arc<Client>`). The callback runs on
    /// a library thread, one call at a time, and should return quickly. A panic in it is
    /// caught and printed, never unwound into C.
    ///
    /// The subscription owns the client, so the client must be in an `Arc`:
    ///
    /// ```compile_fail,E0599
    /// fn subscribe_a_bare_client(client: breaker_client::Client) {
    ///     let _subscription = client.subscribe(|_policy| {});
    /// }
    /// ```
    ///
    /// and the callback runs on another thread, so it must be `Send + Sync`:
    ///
    /// ```compile_fail,E0277
    /// fn subscribe_a_callback_that_is_not_send(client: std::sync::Arc<breaker_client::Client>) {
    ///     let counter = std::rc::Rc::new(std::cell::Cell::new(0));
    ///     let _subscription = client.subscribe(move |_policy| counter.set(counter.get() + 1));
    /// }
    /// ```
    pub fn subscribe<F>(self: &Arc<Self>, callback: F) -> Result<Subscription, Error>
    where
        F: Fn(Arc<Policy>) + Send + Sync + 'static,
    {
        // Weak: the library owns the callback, the client owns the library. The subscription's
        // own Arc keeps the client alive while the callback can run, so the upgrade never
        // holds the last one (whose drop would free the client from its own thread).
        let client = Arc::downgrade(self);
        let boxed: Box<Callback> = Box::new(Box::new(move || {
            if let Some(client) = client.upgrade() {
                callback(client.policy());
            }
        }));
        let user_data = Box::into_raw(boxed);
        let mut id: c_int = 0;
        // SAFETY: live client; `user_data` lives until Subscription's drop has unsubscribed.
        let code = unsafe { ffi::breaker_subscribe(self.raw, trampoline, user_data as *mut c_void, &mut id) };
        if let Err(e) = check(code) {
            // SAFETY: not subscribed: nobody else has it.
            drop(unsafe { Box::from_raw(user_data) });
            return Err(e);
        }
        Ok(Subscription { client: Arc::clone(self), id, user_data })
    }

    /// A receiver of whole policies, watch-style: it holds the latest policy in force, and
    /// [`PolicyWatch::changed`] waits for a newer one (a reader that falls behind sees only
    /// the latest). Built on `std::sync` (Mutex and Condvar), so that any runtime can use it:
    /// a tokio task calls `changed_timeout` from `spawn_blocking`, or polls `try_changed`.
    pub fn watch(self: &Arc<Self>) -> Result<PolicyWatch, Error> {
        let shared = Arc::new(WatchShared { latest: Mutex::new((0, self.policy())), changed: Condvar::new() });
        let writer = Arc::clone(&shared);
        let subscription = self.subscribe(move |policy| {
            let mut latest = writer.latest.lock().unwrap_or_else(|e| e.into_inner());
            *latest = (latest.0 + 1, policy);
            writer.changed.notify_all();
        })?;
        Ok(PolicyWatch { shared, seen: 0, _subscription: subscription })
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.stats();
        f.debug_struct("Client")
            .field("address", &s.address)
            .field("connected", &s.connected)
            .field("synced", &self.is_synced())
            .field("fleet_policy_version", &s.fleet_policy_version)
            .field("source", &s.source)
            .finish()
    }
}


impl Drop for Client {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no other call is running and none can start.
        unsafe { ffi::breaker_client_free(self.raw) }
        // The library's log thread has ended: nothing calls the sink any more.
        drop(self.log.take());
    }
}

unsafe extern "C" fn log_trampoline(user_data: *mut c_void, level: c_int, message: *const c_char) {
    // SAFETY: user_data is the client's Box<LogSink>, alive until its threads have ended;
    // `message` is NUL-terminated, valid for the call.
    let sink = &*(user_data as *const LogSink);
    let message = CStr::from_ptr(message).to_string_lossy();
    if catch_unwind(AssertUnwindSafe(|| (sink.0)(LogLevel::from_c(level), &message))).is_err() {
        eprintln!("breaker-client: a log function panicked; the panic stops at the library's thread");
    }
}

type Callback = Box<dyn Fn() + Send + Sync>;

unsafe extern "C" fn trampoline(user_data: *mut c_void, _version: u64, _mode: c_int, _source: c_int) {
    // SAFETY: user_data is the Box of subscribe, alive until unsubscribed.
    let callback = &*(user_data as *const Callback);
    if catch_unwind(AssertUnwindSafe(callback)).is_err() {
        eprintln!("breaker-client: a policy callback panicked; the panic stops at the library's thread");
    }
}

/// A policy subscription; dropping it unsubscribes (waiting for a running callback), then
/// lets go of its client. `Send + Sync + 'static`.
pub struct Subscription {
    client: Arc<Client>,
    id: c_int,
    user_data: *mut Callback,
}

// SAFETY: the callback it owns is Send + Sync; the C API may be called from any thread.
unsafe impl Send for Subscription {}
unsafe impl Sync for Subscription {}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription").field("id", &self.id).finish()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // SAFETY: once breaker_unsubscribe returns, the callback is neither running nor called
        // again, so the box is ours to free; the client is alive (self.client).
        unsafe {
            ffi::breaker_unsubscribe(self.client.raw, self.id);
            drop(Box::from_raw(self.user_data));
        }
    }
}

struct WatchShared {
    // A count of the policies delivered, and the latest.
    latest: Mutex<(u64, Arc<Policy>)>,
    changed: Condvar,
}

/// The latest policy in force, and a wait for the next ([`Client::watch`]). `Send + Sync`;
/// it keeps its client alive, and stops when dropped.
#[derive(Debug)]
pub struct PolicyWatch {
    shared: Arc<WatchShared>,
    // The count of the policy last returned.
    seen: u64,
    _subscription: Subscription,
}

impl fmt::Debug for WatchShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WatchShared")
    }
}

impl PolicyWatch {
    /// The latest policy, without waiting and without marking it seen.
    pub fn borrow(&self) -> Arc<Policy> {
        Arc::clone(&self.shared.latest.lock().unwrap_or_else(|e| e.into_inner()).1)
    }

    /// The latest policy if it is newer than the last one returned; does not block.
    pub fn try_changed(&mut self) -> Option<Arc<Policy>> {
        let latest = self.shared.latest.lock().unwrap_or_else(|e| e.into_inner());
        if latest.0 == self.seen {
            return None;
        }
        self.seen = latest.0;
        Some(Arc::clone(&latest.1))
    }

    /// Waits at most `timeout` for a policy newer than the last one returned.
    pub fn changed_timeout(&mut self, timeout: Duration) -> Option<Arc<Policy>> {
        let deadline = Instant::now() + timeout;
        let mut latest = self.shared.latest.lock().unwrap_or_else(|e| e.into_inner());
        while latest.0 == self.seen {
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            latest = self.shared.changed.wait_timeout(latest, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
        self.seen = latest.0;
        Some(Arc::clone(&latest.1))
    }
}
