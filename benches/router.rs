//! Router round trip between two shards: two glommio executors joined by
//! the router's channel mesh; shard 0 sends a request through
//! `Router::send`, shard 1 answers through `Router::reply`, shard 0 takes
//! the reply off its mesh receiver and completes the request. No shard
//! state is involved, so this is the price of the hop itself.
//!
//! Sketch: glommio's shared channels are lock-free rings polled by each
//! executor; a hop is a push, a wake of the other executor (an eventfd
//! write when it sleeps) and a poll, so a round trip should cost 2 x ~1-5 us
//! when the peer sleeps, well under a microsecond when both spin. On 2 vCPUs
//! shared with the bench itself the number is mostly wake-up cost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use glommio::channels::channel_mesh::MeshBuilder;
use glommio::{LocalExecutorBuilder, Placement};
use ringbroker::shard::messages::{ShardReply, ShardRequest};
use ringbroker::shard::router::{receiver_streams, PeerTable, Router, RouterMessage};

fn router_round_trip(c: &mut Criterion) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_MEMLOCK) {
        let _ = setrlimit(Resource::RLIMIT_MEMLOCK, hard, hard);
    }
    let mesh = MeshBuilder::<RouterMessage, _>::full(2, 1024);
    let peers = PeerTable::new(2);
    let stop = Arc::new(AtomicBool::new(false));
    let peer_shard = {
        let mesh = mesh.clone();
        let peers = peers.clone();
        let stop = stop.clone();
        LocalExecutorBuilder::new(Placement::Unbound)
            .name("router-bench-1")
            .io_memory(1 << 20)
            .spawn(move || async move {
                let (senders, mut receivers) = mesh.join().await.expect("join mesh");
                peers.set(1, senders.peer_id());
                while !peers.complete() {
                    glommio::timer::sleep(Duration::from_millis(1)).await;
                }
                let router = std::rc::Rc::new(Router::new(1, Some(senders), peers.clone()));
                for (_, stream) in receiver_streams(&mut receivers, &peers) {
                    let router = router.clone();
                    glommio::spawn_local(async move {
                        while let Some(message) = stream.recv().await {
                            if let RouterMessage::Request { from, id, .. } = message {
                                router.reply(from, id, ShardReply::Applied).await;
                            }
                        }
                    })
                    .detach();
                }
                while !stop.load(Ordering::SeqCst) {
                    glommio::timer::sleep(Duration::from_millis(10)).await;
                }
            })
            .expect("second executor")
    };
    let executor = LocalExecutorBuilder::new(Placement::Unbound)
        .io_memory(1 << 20)
        .make()
        .expect("first executor");
    let (router, streams) = executor.run(async {
        let (senders, mut receivers) = mesh.join().await.expect("join mesh");
        peers.set(0, senders.peer_id());
        while !peers.complete() {
            glommio::timer::sleep(Duration::from_millis(1)).await;
        }
        let streams = receiver_streams(&mut receivers, &peers);
        (Router::new(0, Some(senders), peers.clone()), streams)
    });
    let stream = &streams[0].1;
    let mut group = c.benchmark_group("router");
    group.measurement_time(Duration::from_secs(2));
    group.warm_up_time(Duration::from_millis(500));
    group.bench_function("round_trip_two_shards", |b| {
        b.iter_custom(|iters| {
            executor.run(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let body = ShardRequest::WaitForData {
                        items: Vec::new(),
                        max_wait_ms: 0,
                        isolation_level: 0,
                    };
                    let reply = router.send(1, body).await.expect("send");
                    match stream.recv().await {
                        Some(RouterMessage::Reply { id, body }) => router.complete(id, body),
                        other => panic!("unexpected mesh message {other:?}"),
                    }
                    match reply.await {
                        Ok(ShardReply::Applied) => {}
                        other => panic!("unexpected reply {other:?}"),
                    }
                }
                start.elapsed()
            })
        })
    });
    group.finish();
    stop.store(true, Ordering::SeqCst);
    drop(streams);
    drop(router);
    let _ = peer_shard.join();
}

criterion_group!(benches, router_round_trip);
criterion_main!(benches);
