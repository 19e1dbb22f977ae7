//! The transport: QUIC (quinn) with mutual TLS 1.3 from the job secret (`tls`), on a tokio
//! runtime of its own thread. One connection per pair of ranks; on each, one bidirectional
//! control stream of length-prefixed frames (in order) and one unidirectional stream per
//! block, so a large block does not hold up control frames.
//!
//! Set-up: [`listen`] binds (rank 0 at the coordinator's address), [`Listening::join`]
//! meets the others: every rank connects to rank 0 and says hello (its rank, the job's
//! size, where it listens); rank 0 answers with the table of addresses once all have come;
//! then rank `i` connects to every rank below it. Lengths on the wire are checked against
//! limits before anything is allocated for them; a frame over a limit, cut short or
//! garbled ends that connection with [`Event::Lost`] naming what was wrong.

mod frames;
pub mod link;
mod rendezvous;
#[cfg(test)]
mod tests;
mod tls;
mod window;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use quinn::{Connection, Endpoint};

use frames::{read_block, read_frame, write_frame};
use rendezvous::{Peer, rendezvous};
use tokio::sync::{mpsc, oneshot};

pub use link::{Frame, Link, LinkEvent};

/// The largest control frame, block header and block accepted.
pub const MAX_CONTROL: usize = 512 << 20;
pub const MAX_HEADER: usize = 1 << 20;
pub const MAX_BLOCK: u64 = 64 << 30;

/// How this rank joins.
#[derive(Clone)]
pub struct NetConfig {
    pub rank: usize,
    pub size: usize,
    /// Where rank 0 listens (port 0: the OS picks; see [`Listening::local_addr`]).
    pub coordinator: SocketAddr,
    pub secret: [u8; 32],
    /// Keep-alive interval; a peer silent for `idle_timeout` is lost.
    pub keep_alive: Duration,
    pub idle_timeout: Duration,
    /// The whole rendezvous.
    pub connect_timeout: Duration,
    /// The longest this rank asks its peers to wait before they acknowledge a packet
    /// (QUIC's acknowledgement frequency extension, one frame per connection: quinn sends
    /// at least the peer's `min_ack_delay`, 1 ms between quinn's ranks, and at most the
    /// path's round trip or 25 ms, whichever is larger; it also asks the peer for an
    /// immediate acknowledgement only past a reordering of 2 packets, and this rank's
    /// probe timeout, which adds the peer's delay, shrinks with it). `None`: peers keep
    /// the 25 ms they advertise.
    pub ack_delay: Option<Duration>,
}

impl std::fmt::Debug for NetConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetConfig")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("coordinator", &self.coordinator)
            .finish_non_exhaustive()
    }
}

impl NetConfig {
    /// Rank `rank` of `size`, with the default times (keep-alive 1 s, idle 10 s,
    /// rendezvous 30 s, acknowledgements within 1 ms).
    pub fn new(rank: usize, size: usize, coordinator: SocketAddr, secret: [u8; 32]) -> Self {
        NetConfig {
            rank,
            size,
            coordinator,
            secret,
            keep_alive: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(30),
            ack_delay: Some(ACK_DELAY),
        }
    }
}

/// What the transport reports (re-exported from the session's view of it).
pub type Event = LinkEvent;

enum Cmd {
    Send(usize, Frame),
    Close(bool, oneshot::Sender<()>),
}

/// Bytes moved.
#[derive(Debug, Default)]
struct Stats {
    sent: AtomicU64,
    received: AtomicU64,
    /// Whether some other rank is reached at an address that is not loopback.
    elsewhere: std::sync::atomic::AtomicBool,
}

/// A bound endpoint, not yet joined.
pub struct Listening {
    cfg: NetConfig,
    local: SocketAddr,
    go: oneshot::Sender<()>,
    joined: std_mpsc::Receiver<Result<(), String>>,
    net: Net,
}

impl std::fmt::Debug for Listening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listening")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

/// A joined rank: frames to and from every other rank.
pub struct Net {
    rank: usize,
    size: usize,
    cmd: mpsc::UnboundedSender<Cmd>,
    events: std::sync::Mutex<std_mpsc::Receiver<LinkEvent>>,
    thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    stats: Arc<Stats>,
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Net")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// The local address that routes to `to` (no packet is sent).
fn local_ip_towards(to: SocketAddr) -> std::io::Result<std::net::IpAddr> {
    let any: SocketAddr = if to.is_ipv4() {
        "0.0.0.0:0".parse().expect("an address")
    } else {
        "[::]:0".parse().expect("an address")
    };
    let s = UdpSocket::bind(any)?;
    s.connect(to)?;
    Ok(s.local_addr()?.ip())
}

/// The socket buffers asked for, each way.
const SOCKET_BUFFER: usize = 16 << 20;

/// The largest UDP payload a rank sends and accepts. quinn sends up to 10 datagrams in one
/// segmentation-offload batch, which the kernel takes only when it fits one UDP datagram
/// (65,507 bytes of payload over IPv4), so 6,500 is the most that never fails; MTU
/// discovery finds it on loopback (65,536-byte MTU) and on jumbo-frame links, and stays at
/// about 1,452 on a 1,500-byte Ethernet path. Fewer, larger packets cost the network
/// thread less CPU per byte: on loopback 4x fewer packets than at 1,452.
const MAX_UDP_PAYLOAD: u16 = 6500;

/// The longest a rank asks its peers to wait before acknowledging a packet, by default
/// ([`NetConfig::ack_delay`]). With QUIC's 25 ms, 3 MB blocks sent both ways at once on
/// loopback stalled at ~30 ms in 7 to 35 of 60 rounds (a median of 30-31 ms in some
/// runs); with 1 ms none did (a median of 5.8-6.8 ms). Acknowledging every packet at once
/// but keeping the 25 ms still stalled 5 to 20 rounds: the stall's length follows the
/// probe timeout, which adds the peer's delay, not a late acknowledgement as such
/// (`benches/transport.rs`; BENCHMARKS.md, stop 41).
pub const ACK_DELAY: Duration = Duration::from_millis(1);

/// The congestion window's ceiling for a socket whose receive buffer the kernel reports
/// as `reported` bytes (Linux reports twice what it holds for data): half what it holds,
/// at least 256 KiB. See `window.rs`.
fn window_cap(reported: usize) -> u64 {
    (reported as u64 / 4).max(256 << 10)
}

fn transport(cfg: &NetConfig, cap: u64) -> Result<Arc<quinn::TransportConfig>, String> {
    let mut t = quinn::TransportConfig::default();
    let mut mtu = quinn::MtuDiscoveryConfig::default();
    mtu.upper_bound(MAX_UDP_PAYLOAD);
    t.mtu_discovery_config(Some(mtu))
        .congestion_controller_factory(Arc::new(window::CappedCubic { cap }));
    if let Some(delay) = cfg.ack_delay {
        let mut ack = quinn::AckFrequencyConfig::default();
        ack.max_ack_delay(Some(delay));
        t.ack_frequency_config(Some(ack));
    }
    t.initial_rtt(Duration::from_millis(10))
        .keep_alive_interval(Some(cfg.keep_alive))
        .max_idle_timeout(Some(
            quinn::IdleTimeout::try_from(cfg.idle_timeout).map_err(|e| e.to_string())?,
        ))
        .stream_receive_window(quinn::VarInt::from_u32(64 << 20))
        .receive_window(quinn::VarInt::from_u32(256 << 20))
        .send_window(256 << 20)
        .max_concurrent_uni_streams(quinn::VarInt::from_u32(4096));
    Ok(Arc::new(t))
}

/// Binds this rank's endpoint and starts its network thread.
pub fn listen(cfg: NetConfig) -> Result<Listening, String> {
    if cfg.size < 2 || cfg.rank >= cfg.size {
        return Err(format!("rank {} of a job of {}", cfg.rank, cfg.size));
    }
    let (ready_tx, ready_rx) = std_mpsc::channel();
    let (go_tx, go_rx) = oneshot::channel();
    let (joined_tx, joined_rx) = std_mpsc::channel();
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    let (ev_tx, ev_rx) = std_mpsc::channel();
    let stats = Arc::new(Stats::default());
    let st = stats.clone();
    let c = cfg.clone();
    let thread = std::thread::Builder::new()
        .name("strads-net".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("cannot start the network runtime: {e}")));
                    return;
                }
            };
            rt.block_on(run(c, ready_tx, go_rx, joined_tx, cmd_rx, ev_tx, st));
        })
        .map_err(|e| format!("cannot start the network thread: {e}"))?;
    let local = ready_rx
        .recv()
        .map_err(|_| "the network thread ended".to_string())??;
    Ok(Listening {
        net: Net {
            rank: cfg.rank,
            size: cfg.size,
            cmd: cmd_tx,
            events: std::sync::Mutex::new(ev_rx),
            thread: std::sync::Mutex::new(Some(thread)),
            stats,
        },
        cfg,
        local,
        go: go_tx,
        joined: joined_rx,
    })
}

impl Listening {
    /// Where this rank listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Meets every other rank (bounded by the config's `connect_timeout`).
    pub fn join(self) -> Result<Net, String> {
        let _ = self.go.send(());
        let limit = self.cfg.connect_timeout + Duration::from_secs(5);
        match self.joined.recv_timeout(limit) {
            Ok(Ok(())) => Ok(self.net),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(format!(
                "rank {} could not meet the others within {} s",
                self.cfg.rank,
                limit.as_secs()
            )),
        }
    }
}

impl Net {
    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Ranks in the job.
    pub fn size(&self) -> usize {
        self.size
    }
}

impl Link for Net {
    fn send(&self, to: usize, frame: Frame) {
        let _ = self.cmd.send(Cmd::Send(to, frame));
    }

    fn recv_timeout(&self, d: Duration) -> Option<LinkEvent> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .recv_timeout(d)
            .ok()
    }

    fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.cmd.send(Cmd::Close(self.rank == 0, tx)).is_ok() {
            let _ = rx.blocking_recv();
        }
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }

    fn one_host(&self) -> bool {
        !self.stats.elsewhere.load(Ordering::Relaxed)
    }

    fn bytes(&self) -> (u64, u64) {
        (
            self.stats.sent.load(Ordering::Relaxed),
            self.stats.received.load(Ordering::Relaxed),
        )
    }
}

fn lost_reason(e: &quinn::ConnectionError, idle: Duration) -> String {
    match e {
        quinn::ConnectionError::TimedOut => {
            format!(
                "no packet for {} s (dead, hung or cut off)",
                idle.as_secs_f64()
            )
        }
        quinn::ConnectionError::ApplicationClosed(c) => {
            format!(
                "closed its connection ({})",
                String::from_utf8_lossy(&c.reason)
            )
        }
        other => other.to_string(),
    }
}

#[allow(clippy::too_many_arguments)]
async fn run(
    cfg: NetConfig,
    ready: std_mpsc::Sender<Result<SocketAddr, String>>,
    go: oneshot::Receiver<()>,
    joined: std_mpsc::Sender<Result<(), String>>,
    mut cmds: mpsc::UnboundedReceiver<Cmd>,
    events: std_mpsc::Sender<LinkEvent>,
    stats: Arc<Stats>,
) {
    let setup = (|| {
        let t = tls::configs(&cfg.secret)?;
        let bind = if cfg.rank == 0 {
            cfg.coordinator
        } else {
            let ip = local_ip_towards(cfg.coordinator)
                .map_err(|e| format!("no route to the coordinator {}: {e}", cfg.coordinator))?;
            SocketAddr::new(ip, 0)
        };
        let socket =
            std::net::UdpSocket::bind(bind).map_err(|e| format!("cannot listen at {bind}: {e}"))?;
        // Room for a burst of blocks: with the default (about 200 KiB) the kernel drops
        // datagrams that arrive while the network thread waits for a core, and every drop
        // costs a retransmission and a smaller congestion window. The kernel caps the size
        // at `net.core.rmem_max` / `wmem_max`; a smaller buffer only costs speed.
        let sock = socket2::SockRef::from(&socket);
        let _ = sock.set_recv_buffer_size(SOCKET_BUFFER);
        let _ = sock.set_send_buffer_size(SOCKET_BUFFER);
        let cap = window_cap(sock.recv_buffer_size().unwrap_or(0));
        let transport = transport(&cfg, cap)?;
        let mut server = quinn::ServerConfig::with_crypto(Arc::new(
            quinn::crypto::rustls::QuicServerConfig::try_from(t.server)
                .map_err(|e| e.to_string())?,
        ));
        server.transport_config(transport.clone());
        let mut client = quinn::ClientConfig::new(Arc::new(
            quinn::crypto::rustls::QuicClientConfig::try_from(t.client)
                .map_err(|e| e.to_string())?,
        ));
        client.transport_config(transport);
        let runtime = quinn::default_runtime().ok_or("no async runtime for QUIC")?;
        let mut endpoint = quinn::EndpointConfig::default();
        endpoint
            .max_udp_payload_size(MAX_UDP_PAYLOAD)
            .map_err(|e| e.to_string())?;
        let mut ep = Endpoint::new(endpoint, Some(server), socket, runtime)
            .map_err(|e| format!("cannot listen at {bind}: {e}"))?;
        ep.set_default_client_config(client);
        let local = ep.local_addr().map_err(|e| e.to_string())?;
        Ok::<_, String>((ep, local))
    })();
    let (ep, local) = match setup {
        Ok(x) => x,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(local));
    if go.await.is_err() {
        return;
    }
    let peers = match rendezvous(&ep, &cfg, local).await {
        Ok(p) => p,
        Err(e) => {
            ep.close(1u32.into(), b"rendezvous failed");
            let _ = joined.send(Err(e));
            return;
        }
    };
    stats.elsewhere.store(
        peers.iter().any(|p| !p.addr.ip().is_loopback()),
        Ordering::Relaxed,
    );
    let _ = joined.send(Ok(()));
    let mut writers: Vec<Option<mpsc::UnboundedSender<Vec<u8>>>> =
        (0..cfg.size).map(|_| None).collect();
    let mut conns: Vec<Option<Connection>> = (0..cfg.size).map(|_| None).collect();
    let mut tasks = tokio::task::JoinSet::new();
    let mut outs = tokio::task::JoinSet::new();
    let mut blocks = tokio::task::JoinSet::new();
    for p in peers {
        let Peer {
            rank,
            conn,
            mut send,
            mut recv,
            addr,
        } = p;
        conns[rank] = Some(conn.clone());
        // Control frames out, in order.
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        writers[rank] = Some(tx);
        let st = stats.clone();
        outs.spawn(async move {
            while let Some(bytes) = rx.recv().await {
                if write_frame(&mut send, &bytes).await.is_err() {
                    return;
                }
                st.sent.fetch_add(bytes.len() as u64 + 4, Ordering::Relaxed);
            }
            let _ = send.finish();
            let _ = send.stopped().await;
        });
        // Control frames in.
        let (ev, st, c2) = (events.clone(), stats.clone(), conn.clone());
        tasks.spawn(async move {
            loop {
                match read_frame(&mut recv, MAX_CONTROL).await {
                    Ok(Some(b)) => {
                        st.received.fetch_add(b.len() as u64 + 4, Ordering::Relaxed);
                        let _ = ev.send(LinkEvent::Frame {
                            from: rank,
                            frame: Frame::Control(b),
                        });
                    }
                    Ok(None) => return,
                    // The connection's end is reported once, with its reason, below.
                    Err(_) if c2.close_reason().is_some() => return,
                    Err(e) => {
                        c2.close(2u32.into(), b"bad frame");
                        let _ = ev.send(LinkEvent::Lost {
                            rank,
                            reason: format!("rank {rank} at {addr} sent {e}"),
                        });
                        return;
                    }
                }
            }
        });
        // Blocks in.
        let (ev, st, c3) = (events.clone(), stats.clone(), conn.clone());
        tasks.spawn(async move {
            while let Ok(r) = c3.accept_uni().await {
                match read_block(r).await {
                    Ok((header, data)) => {
                        st.received
                            .fetch_add((header.len() + data.len()) as u64 + 12, Ordering::Relaxed);
                        let _ = ev.send(LinkEvent::Frame {
                            from: rank,
                            frame: Frame::Block {
                                header,
                                data: data.into(),
                            },
                        });
                    }
                    Err(_) if c3.close_reason().is_some() => return,
                    Err(e) => {
                        c3.close(2u32.into(), b"bad block");
                        let _ = ev.send(LinkEvent::Lost {
                            rank,
                            reason: format!("rank {rank} at {addr} sent {e}"),
                        });
                        return;
                    }
                }
            }
        });
        // The connection's end.
        let (ev, idle) = (events.clone(), cfg.idle_timeout);
        tasks.spawn(async move {
            let e = conn.closed().await;
            if !matches!(e, quinn::ConnectionError::LocallyClosed) {
                let _ = ev.send(LinkEvent::Lost {
                    rank,
                    reason: format!("rank {rank} at {addr}: {}", lost_reason(&e, idle)),
                });
            }
        });
    }
    let done = loop {
        match cmds.recv().await {
            Some(Cmd::Send(to, Frame::Control(bytes))) => {
                if let Some(Some(w)) = writers.get(to) {
                    let _ = w.send(bytes);
                }
            }
            Some(Cmd::Send(to, Frame::Block { header, data })) => {
                if let Some(Some(c)) = conns.get(to) {
                    let (c, st) = (c.clone(), stats.clone());
                    blocks.spawn(async move {
                        let Ok(mut s) = c.open_uni().await else {
                            return;
                        };
                        let n = (header.len() + data.len()) as u64 + 12;
                        if write_frame(&mut s, &header).await.is_ok()
                            && s.write_all(&(data.len() as u64).to_le_bytes())
                                .await
                                .is_ok()
                            && s.write_chunk(data).await.is_ok()
                        {
                            st.sent.fetch_add(n, Ordering::Relaxed);
                        }
                        let _ = s.finish();
                        let _ = s.stopped().await;
                    });
                }
            }
            Some(Cmd::Close(wait_peers, done)) => break Some((wait_peers, done)),
            None => break None,
        }
    };
    // Flush: every queued frame and block out and acknowledged (bounded).
    writers.clear();
    let flush = async {
        while blocks.join_next().await.is_some() {}
        while outs.join_next().await.is_some() {}
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), flush).await;
    if let Some((true, _)) = &done {
        // The driver lets the workers close first, so its last frames reach them.
        let all = async {
            for c in conns.iter().flatten() {
                let _ = c.closed().await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(5), all).await;
    }
    ep.close(0u32.into(), b"done");
    let _ = tokio::time::timeout(Duration::from_secs(2), ep.wait_idle()).await;
    tasks.abort_all();
    if let Some((_, d)) = done {
        let _ = d.send(());
    }
}
