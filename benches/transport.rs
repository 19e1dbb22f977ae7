//! The transport alone: two ranks of one job as threads of this process, each with its
//! own QUIC endpoint and network thread, on loopback. For each block size, rounds in
//! which both ranks send each other a block at once (what a merge's reduce-scatter round
//! or a ring's step does) and rounds in which one rank sends and the other only receives;
//! prints the median, fastest and slowest round, how many rounds took more than 4 times
//! the fastest (stalls), and the median's rate. The copies sent are made before a
//! round's clock starts. Run it with strads'
//! acknowledgement delay (the default) and with QUIC's (`--quic-default-ack`) to see what
//! the delay does to a round.
//!
//! ```text
//! cargo bench --bench transport
//! cargo bench --bench transport -- --rounds 60 --sizes 65536,3145728
//! cargo bench --bench transport -- --quic-default-ack
//! ```

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use clap::Parser;
use strads::cluster::net::{ACK_DELAY, Frame, Link, LinkEvent, Net, NetConfig, listen};

#[derive(Parser, Debug)]
#[command(about = "Block transfers between two ranks over QUIC on loopback")]
struct Args {
    /// Rounds per block size and pattern.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Block sizes in bytes, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [65_536usize, 1 << 20, 3 << 20, 16 << 20])]
    sizes: Vec<usize>,
    /// Leave acknowledgements to QUIC's default (up to 25 ms) instead of strads' delay.
    #[arg(long)]
    quic_default_ack: bool,
    /// Ignored (`cargo bench` passes it).
    #[arg(long, hide = true)]
    bench: bool,
}

/// Two joined ranks.
fn mesh(ack: Option<Duration>) -> Vec<Net> {
    let secret = [7u8; 32];
    let config = move |rank: usize, coord: SocketAddr| {
        let mut c = NetConfig::new(rank, 2, coord, secret);
        c.ack_delay = ack;
        c
    };
    let any: SocketAddr = "127.0.0.1:0".parse().expect("an address");
    let zero = listen(config(0, any)).unwrap_or_else(|e| panic!("rank 0 cannot listen: {e}"));
    let coord = zero.local_addr();
    let one = std::thread::spawn(move || {
        listen(config(1, coord))
            .and_then(|l| l.join())
            .unwrap_or_else(|e| panic!("rank 1 cannot join: {e}"))
    });
    let zero = zero
        .join()
        .unwrap_or_else(|e| panic!("rank 0 cannot join: {e}"));
    vec![zero, one.join().expect("rank 1's thread")]
}

/// Waits for the next block at `net` (bounded), and checks its size.
fn take_block(net: &Net, size: usize) {
    match net.recv_timeout(Duration::from_secs(30)) {
        Some(LinkEvent::Frame {
            frame: Frame::Block { data, .. },
            ..
        }) => assert_eq!(data.len(), size, "a block arrives whole"),
        Some(LinkEvent::Lost { rank, reason }) => panic!("rank {rank} lost: {reason}"),
        Some(other) => panic!("an event other than a block: {other:?}"),
        None => panic!("no block within 30 s"),
    }
}

fn main() {
    let args = Args::parse();
    let ack = if args.quic_default_ack {
        None
    } else {
        Some(ACK_DELAY)
    };
    let nets = mesh(ack);
    println!(
        "acknowledgement delay: {}; {} rounds per row",
        ack.map_or("QUIC's default (25 ms)".to_string(), |d| format!("{d:?}")),
        args.rounds
    );
    println!(
        "| block bytes | pattern | median ms | fastest ms | slowest ms | rounds over 4 x the fastest | MB/s each way (median) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &size in &args.sizes {
        let block: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        for both in [true, false] {
            let mut ms: Vec<f64> = Vec::with_capacity(args.rounds as usize);
            for _ in 0..args.rounds {
                let senders = if both { &nets[..] } else { &nets[..1] };
                let copies: Vec<Vec<u8>> = senders.iter().map(|_| block.clone()).collect();
                let t = Instant::now();
                for (a, data) in senders.iter().zip(copies) {
                    let to = 1 - a.rank();
                    a.send(
                        to,
                        Frame::Block {
                            header: vec![0],
                            data: data.into(),
                        },
                    );
                }
                for a in senders {
                    take_block(&nets[1 - a.rank()], size);
                }
                ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
            ms.sort_by(f64::total_cmp);
            let median = ms[ms.len() / 2];
            println!(
                "| {size} | {} | {median:.2} | {:.2} | {:.2} | {} | {:.0} |",
                if both { "both ways at once" } else { "one way" },
                ms[0],
                ms[ms.len() - 1],
                ms.iter().filter(|&&m| m > 4.0 * ms[0]).count(),
                size as f64 / (median / 1e3) / 1e6
            );
        }
    }
    let mut nets = nets.into_iter();
    let zero = nets.next().expect("rank 0");
    for n in nets {
        n.close();
    }
    zero.close();
}
