//! The crate from threads, as an async runtime's tasks use it: a subscription and a policy
//! watch own their client, so a struct holds them beside its `Arc<Client>`, and a thread (a
//! task across `.await`) takes them along. tokio is not among the crate's dependencies;
//! these are std threads.

mod common;

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use breaker_client::{Client, Mode, PolicyWatch, Subscription};
use common::Breakerd;

/// Compiles only for what a task may hold across `.await` on a multi-threaded runtime.
fn assert_send_sync_static<T: Send + Sync + 'static>(_: &T) {}

/// What a node's service keeps: the client and what it subscribed, side by side.
struct Node {
    client: Arc<Client>,
    _subscription: Subscription,
    watch: PolicyWatch,
}

#[test]
fn a_subscription_and_a_watch_move_between_threads_with_their_client() {
    let d = Breakerd::start("threads-async");
    let client = Arc::new(Client::new(&d.options("rust-async")).unwrap());
    let (sender, receiver) = std::sync::mpsc::channel();
    // Before Rust 1.72 a Sender is not Sync: the callback shares it behind a Mutex.
    let sender = std::sync::Mutex::new(sender);
    let subscription = client
        .subscribe(move |policy| {
            let _ = sender.lock().unwrap().send(policy.version);
        })
        .unwrap();
    let watch = client.watch().unwrap();
    assert_send_sync_static(&subscription);
    assert_send_sync_static(&watch);
    assert_send_sync_static(&client);
    let node = Node { client, _subscription: subscription, watch };
    println!("{:?}", node.client);

    // Another thread owns the node from now on, and waits on the watch there.
    let handle = thread::spawn(move || {
        let mut node = node;
        while !node.client.is_synced() {
            thread::sleep(Duration::from_millis(10));
        }
        let policy = node.watch.changed_timeout(Duration::from_secs(20)).expect("a fleet policy");
        assert!(policy.version > 0);
        assert_eq!(policy.mode, Mode::AllBuilders);
        node
    });
    let node = handle.join().unwrap();
    // The subscription delivered the same policies, whole: the local one, then the fleet's.
    let mut version = 0;
    while version == 0 {
        version = receiver.recv_timeout(Duration::from_secs(20)).unwrap();
    }
    // The client outlives the local `client` binding: the node holds it.
    assert!(node.client.is_synced());
    let mut watch = node.watch;
    assert!(watch.try_changed().is_none() || watch.borrow().version >= version);
    drop(node._subscription);
    drop(watch);
    assert_eq!(Arc::strong_count(&node.client), 1, "the subscription and the watch let go of the client");
}
