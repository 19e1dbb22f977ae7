//! The transport on loopback: ranks on threads of one process, each with its own
//! endpoint and network thread.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::frames::read_frame;
use super::rendezvous::{Hello, dial};
use super::*;

fn config(rank: usize, size: usize, coord: SocketAddr, secret: u8) -> NetConfig {
    let mut c = NetConfig::new(rank, size, coord, [secret; 32]);
    c.idle_timeout = Duration::from_millis(500);
    c.keep_alive = Duration::from_millis(100);
    c.connect_timeout = Duration::from_secs(10);
    c
}

/// `size` ranks of the job with secret `secret`, joined.
fn mesh(size: usize, secret: u8) -> Vec<Net> {
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let zero = listen(config(0, size, any, secret)).unwrap();
    let coord = zero.local_addr();
    let others: Vec<_> = (1..size)
        .map(|r| std::thread::spawn(move || listen(config(r, size, coord, secret)).unwrap().join()))
        .collect();
    let mut nets = vec![zero.join().unwrap()];
    for t in others {
        nets.push(t.join().unwrap().unwrap());
    }
    nets
}

/// The next frame event, within a bound.
fn next(net: &Net) -> LinkEvent {
    net.recv_timeout(Duration::from_secs(10))
        .expect("an event within 10 s")
}

#[test]
fn three_ranks_exchange_control_frames_in_order_and_blocks_whole() {
    let t0 = Instant::now();
    let nets = mesh(3, 7);
    eprintln!("3 ranks joined in {:?}", t0.elapsed());
    let block: Vec<u8> = (0..8 << 20).map(|i| (i % 251) as u8).collect();
    for a in &nets {
        for b in 0..3 {
            if b == a.rank() {
                continue;
            }
            for k in 0..100u32 {
                a.send(b, Frame::Control(k.to_le_bytes().to_vec()));
            }
            a.send(
                b,
                Frame::Block {
                    header: vec![a.rank() as u8],
                    data: block.clone().into(),
                },
            );
        }
    }
    for b in &nets {
        let mut seen = [0u32; 3];
        let mut blocks = 0;
        while blocks < 2 || seen.iter().sum::<u32>() < 200 {
            match next(b) {
                LinkEvent::Frame {
                    from,
                    frame: Frame::Control(bytes),
                } => {
                    assert_eq!(bytes, seen[from].to_le_bytes(), "in order from {from}");
                    seen[from] += 1;
                }
                LinkEvent::Frame {
                    from,
                    frame: Frame::Block { header, data },
                } => {
                    assert_eq!(header, vec![from as u8]);
                    assert!(data == block, "the block arrives whole");
                    blocks += 1;
                }
                LinkEvent::Lost { rank, reason } => panic!("lost {rank}: {reason}"),
            }
        }
        let (sent, received) = b.bytes();
        assert!(
            sent >= 2 * (8 << 20) && received >= 2 * (8 << 20),
            "{sent} {received}"
        );
    }
    // Workers close first, then the driver.
    let mut nets = nets.into_iter();
    let zero = nets.next().unwrap();
    for n in nets {
        n.close();
    }
    zero.close();
}

#[test]
fn a_process_with_another_secret_cannot_join() {
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let zero = listen(config(0, 2, any, 1)).unwrap();
    let coord = zero.local_addr();
    let zero = std::thread::spawn(move || zero.join());
    let intruder = std::thread::spawn(move || listen(config(1, 2, coord, 2)).unwrap().join());
    let intruder = intruder.join().unwrap();
    let e = intruder.expect_err("refused");
    assert!(e.contains("refused the handshake"), "{e}");
    assert!(e.contains("does not hold the job's secret"), "{e}");
    // The job still forms with the right rank 1.
    let good = std::thread::spawn(move || listen(config(1, 2, coord, 1)).unwrap().join());
    let zero = zero.join().unwrap().unwrap();
    let one = good.join().unwrap().unwrap();
    one.send(0, Frame::Control(b"hi".to_vec()));
    match next(&zero) {
        LinkEvent::Frame {
            from: 1,
            frame: Frame::Control(b),
        } => assert_eq!(b, b"hi"),
        other => panic!("{other:?}"),
    }
    one.close();
    zero.close();
}

#[test]
fn a_peer_that_goes_silent_is_lost_within_the_idle_time() {
    let mut nets = mesh(2, 3);
    let one = nets.pop().unwrap();
    let zero = nets.pop().unwrap();
    // Rank 1's network thread stops without closing: its peer hears nothing more.
    let t = one.thread.lock().unwrap().take().unwrap();
    let _ = one.cmd.send(Cmd::Close(false, oneshot::channel().0));
    drop(one);
    let _ = t.join();
    let start = Instant::now();
    match next(&zero) {
        LinkEvent::Lost { rank: 1, reason } => {
            assert!(reason.starts_with("rank 1 at 127.0.0.1:"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(start.elapsed() < Duration::from_secs(5));
    zero.close();
}

/// What a hand-made rank 1 sends after a valid hello.
#[derive(Clone, Copy)]
enum Rogue {
    /// A control frame over the limit.
    HugeFrame,
    /// A block stream that declares 1000 bytes and ends after 10.
    ShortBlock,
    /// A block stream that declares 10 bytes and carries 20.
    LongBlock,
}

/// The reason rank 0 gives for losing a rank 1 that behaves as `rogue` says.
fn lost_to(rogue: Rogue, secret: u8) -> String {
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let zero = listen(config(0, 2, any, secret)).unwrap();
    let coord = zero.local_addr();
    let peer = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let cfg = config(1, 2, coord, secret);
            let t = tls::configs(&cfg.secret).unwrap();
            let mut client = quinn::ClientConfig::new(Arc::new(
                quinn::crypto::rustls::QuicClientConfig::try_from(t.client).unwrap(),
            ));
            client.transport_config(transport(&cfg, window_cap(0)).unwrap());
            let mut ep = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
            ep.set_default_client_config(client);
            let local = ep.local_addr().unwrap();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            let (conn, mut send, mut recv) = dial(&ep, &cfg, coord, local, deadline).await.unwrap();
            let _table = read_frame(&mut recv, 1 << 20).await.unwrap();
            match rogue {
                Rogue::HugeFrame => {
                    send.write_all(&u32::MAX.to_le_bytes()).await.unwrap();
                    send.write_all(&[0; 64]).await.unwrap();
                }
                Rogue::ShortBlock | Rogue::LongBlock => {
                    let (declared, sent) = match rogue {
                        Rogue::ShortBlock => (1000u64, 10),
                        _ => (10, 20),
                    };
                    let mut s = conn.open_uni().await.unwrap();
                    s.write_all(&1u32.to_le_bytes()).await.unwrap();
                    s.write_all(&[7]).await.unwrap();
                    s.write_all(&declared.to_le_bytes()).await.unwrap();
                    s.write_all(&vec![1; sent]).await.unwrap();
                    s.finish().unwrap();
                }
            }
            let _ = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
        });
    });
    let zero = zero.join().unwrap();
    let reason = match next(&zero) {
        LinkEvent::Lost { rank: 1, reason } => reason,
        other => panic!("{other:?}"),
    };
    peer.join().unwrap();
    zero.close();
    reason
}

#[test]
fn garbled_frames_end_the_connection_with_the_reason() {
    let reason = lost_to(Rogue::HugeFrame, 9);
    assert!(
        reason.contains("a frame of 4294967295 bytes, over the limit"),
        "{reason}"
    );
}

#[test]
fn blocks_cut_short_or_too_long_end_the_connection_with_the_reason() {
    let reason = lost_to(Rogue::ShortBlock, 10);
    assert!(
        reason.contains("sent a block of 1000 bytes cut short after 10"),
        "{reason}"
    );
    let reason = lost_to(Rogue::LongBlock, 11);
    assert!(
        reason.contains("sent a block of 10 bytes with more bytes after it"),
        "{reason}"
    );
}

proptest::proptest! {
    #[test]
    fn hellos_and_tables_decode_any_bytes_without_panicking(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)
    ) {
        let _ = postcard::from_bytes::<Hello>(&bytes);
        let _ = postcard::from_bytes::<Vec<String>>(&bytes);
    }
}

#[test]
fn the_window_ceiling_is_half_the_receive_buffer_and_at_least_256_kib() {
    // Linux reports twice the bytes a socket buffer holds for data.
    assert_eq!(window_cap(8 << 20), 2 << 20);
    assert_eq!(window_cap(425_984), 256 << 10);
    assert_eq!(window_cap(0), 256 << 10);
}
