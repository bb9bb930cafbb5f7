//! Runner leases on both backends: one holder at a time, renewal by revision, loss detected,
//! epochs that grow when the lease changes hands.

use crate::for_both_backends;
use crate::support;

use std::time::Duration;

use iron::spine::durable::lease::{Lease, LeaseError, hold};
use support::harness::Harness;
use tokio_util::sync::CancellationToken;

async fn one_holder_at_a_time<H: Harness>(mut h: H) {
    let kv = h.open().await;
    let mut a = Lease::acquire(&kv, "runner-newsroom", "a").await.unwrap();
    assert_eq!(a.epoch(), 1);
    match Lease::acquire(&kv, "runner-newsroom", "b").await {
        Err(LeaseError::Held { holder, epoch, .. }) => {
            assert_eq!(holder, "a");
            assert_eq!(epoch, 1);
        }
        other => panic!("b must not get the lease: {other:?}"),
    }
    a.renew(&kv).await.unwrap();
    a.renew(&kv).await.unwrap();
    a.clone().release(&kv).await.unwrap();
    // Released: the next holder gets it with a higher epoch.
    let mut b = Lease::acquire(&kv, "runner-newsroom", "b").await.unwrap();
    assert_eq!(b.epoch(), 2);
    // `a` still thinks it holds the lease: its renewal is refused.
    assert!(matches!(a.renew(&kv).await, Err(LeaseError::Lost { .. })));
    b.renew(&kv).await.unwrap();
}

async fn a_holder_learns_it_lost_the_lease<H: Harness>(mut h: H) {
    let kv = h.open().await;
    let lease = Lease::acquire(&kv, "runner-dev", "a").await.unwrap();
    let stale = lease.clone();
    let stop = CancellationToken::new();
    let lost = hold(kv.clone(), lease, Duration::from_millis(50), stop.clone());
    // Someone deletes it by revision (as an operator or an expiry would make it vanish).
    stale.release(&kv).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), lost.cancelled())
        .await
        .expect("the holder is told at its next renewal");
    stop.cancel();
}

async fn phone_book_and_scratchpad<H: Harness>(mut h: H) {
    use iron::spine::durable::registry::{Listing, lookup, register, scratch_get, scratch_put};
    let kv = h.open().await;
    assert_eq!(lookup(&kv, "acled").await.unwrap(), None);
    let first = Listing {
        endpoint: "tcp/127.0.0.1:41000".into(),
        owner: "source-a".into(),
    };
    register(&kv, "acled", &first).await.unwrap();
    assert_eq!(lookup(&kv, "acled").await.unwrap(), Some(first));
    // Re-registering (a restart on another port) replaces the entry.
    let moved = Listing {
        endpoint: "tcp/127.0.0.1:42000".into(),
        owner: "source-a".into(),
    };
    register(&kv, "acled", &moved).await.unwrap();
    assert_eq!(lookup(&kv, "acled").await.unwrap(), Some(moved));
    scratch_put(&kv, "draft", b"v1".to_vec()).await.unwrap();
    scratch_put(&kv, "draft", b"v2".to_vec()).await.unwrap();
    assert_eq!(
        scratch_get(&kv, "draft").await.unwrap(),
        Some(b"v2".to_vec())
    );
    assert_eq!(scratch_get(&kv, "missing").await.unwrap(), None);
}

for_both_backends!(
    one_holder_at_a_time,
    a_holder_learns_it_lost_the_lease,
    phone_book_and_scratchpad
);
