//! Meeting the other ranks: hellos, the table of addresses, one connection per pair.

use std::net::SocketAddr;
use std::time::Duration;

use quinn::{Connection, Endpoint, RecvStream, SendStream};

use super::frames::{read_frame, write_frame};
use super::{NetConfig, tls};

/// The hello a rank sends on a new connection: its rank, the job's size, where it
/// listens.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Hello {
    pub(super) rank: u32,
    pub(super) size: u32,
    pub(super) addr: String,
}

/// A peer once connected.
pub(super) struct Peer {
    pub(super) rank: usize,
    pub(super) conn: Connection,
    pub(super) send: SendStream,
    pub(super) recv: RecvStream,
    pub(super) addr: SocketAddr,
}

fn refused(e: &quinn::ConnectionError) -> bool {
    matches!(
        e,
        quinn::ConnectionError::TransportError(_) | quinn::ConnectionError::ConnectionClosed(_)
    )
}

/// Connects to `to` and says hello (retrying a peer that is not up yet until `deadline`).
pub(super) async fn dial(
    ep: &Endpoint,
    cfg: &NetConfig,
    to: SocketAddr,
    local: SocketAddr,
    deadline: tokio::time::Instant,
) -> Result<(Connection, SendStream, RecvStream), String> {
    loop {
        let attempt = async {
            let conn = ep
                .connect(to, tls::SERVER_NAME)
                .map_err(|e| (false, e.to_string()))?
                .await
                .map_err(|e| (refused(&e), e.to_string()))?;
            let (mut send, recv) = conn.open_bi().await.map_err(|e| (false, e.to_string()))?;
            let hello = Hello {
                rank: cfg.rank as u32,
                size: cfg.size as u32,
                addr: local.to_string(),
            };
            write_frame(
                &mut send,
                &postcard::to_allocvec(&hello).expect("hello encodes"),
            )
            .await
            .map_err(|e| (false, e))?;
            Ok::<_, (bool, String)>((conn, send, recv))
        };
        match tokio::time::timeout(Duration::from_secs(2), attempt).await {
            Ok(Ok(c)) => return Ok(c),
            Ok(Err((true, e))) => {
                return Err(format!(
                    "the rank at {to} refused the handshake ({e}): this process does not hold \
                     the job's secret (STRADS_JOB_SECRET_FILE of another job?)"
                ));
            }
            Ok(Err((false, _))) | Err(_) => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "no rank answered at {to} within the rendezvous time"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Accepts one connection that says hello; handshakes that fail (another job's secret)
/// are logged and skipped.
async fn accept(ep: &Endpoint, cfg: &NetConfig) -> Result<(Peer, Hello), String> {
    loop {
        let Some(incoming) = ep.accept().await else {
            return Err("the endpoint closed".into());
        };
        let remote = incoming.remote_address();
        let conn = match incoming.await {
            Ok(c) => c,
            Err(e) => {
                crate::log::say!(
                    Warn,
                    "strads: rank {}: refused a connection from {remote} ({e}): it does not hold \
                     the job's secret",
                    cfg.rank
                );
                continue;
            }
        };
        let Ok(Ok((send, mut recv))) =
            tokio::time::timeout(Duration::from_secs(5), conn.accept_bi()).await
        else {
            conn.close(1u32.into(), b"no hello");
            continue;
        };
        let hello = match read_frame(&mut recv, 4096).await {
            Ok(Some(b)) => match postcard::from_bytes::<Hello>(&b) {
                Ok(h) => h,
                Err(e) => {
                    conn.close(1u32.into(), b"bad hello");
                    crate::log::say!(
                        Warn,
                        "strads: rank {}: a garbled hello from {remote} ({e})",
                        cfg.rank
                    );
                    continue;
                }
            },
            _ => {
                conn.close(1u32.into(), b"no hello");
                continue;
            }
        };
        let addr = hello
            .addr
            .parse()
            .map_err(|_| format!("rank {} said it listens at {:?}", hello.rank, hello.addr))?;
        if hello.size as usize != cfg.size || hello.rank as usize >= cfg.size {
            return Err(format!(
                "a process at {remote} says it is rank {} of {}, in a job of {}",
                hello.rank, hello.size, cfg.size
            ));
        }
        return Ok((
            Peer {
                rank: hello.rank as usize,
                conn,
                send,
                recv,
                addr,
            },
            hello,
        ));
    }
}

pub(super) async fn rendezvous(
    ep: &Endpoint,
    cfg: &NetConfig,
    local: SocketAddr,
) -> Result<Vec<Peer>, String> {
    let deadline = tokio::time::Instant::now() + cfg.connect_timeout;
    let mut peers: Vec<Peer> = Vec::new();
    if cfg.rank == 0 {
        while peers.len() < cfg.size - 1 {
            let (p, _) = tokio::time::timeout_at(deadline, accept(ep, cfg))
                .await
                .map_err(|_| {
                    let missing: Vec<String> = (1..cfg.size)
                        .filter(|r| peers.iter().all(|p| p.rank != *r))
                        .map(|r| r.to_string())
                        .collect();
                    format!(
                        "ranks {} did not join within {} s",
                        missing.join(", "),
                        cfg.connect_timeout.as_secs()
                    )
                })??;
            if p.rank == 0 || peers.iter().any(|q| q.rank == p.rank) {
                return Err(format!("two processes say they are rank {}", p.rank));
            }
            peers.push(p);
        }
        peers.sort_by_key(|p| p.rank);
        let mut table = vec![local.to_string()];
        table.extend(peers.iter().map(|p| p.addr.to_string()));
        let bytes = postcard::to_allocvec(&table).expect("the table encodes");
        for p in &mut peers {
            write_frame(&mut p.send, &bytes).await?;
        }
    } else {
        let (conn, send, mut recv) = dial(ep, cfg, cfg.coordinator, local, deadline).await?;
        let table = tokio::time::timeout_at(deadline, read_frame(&mut recv, 1 << 20))
            .await
            .map_err(|_| "rank 0 sent no table of ranks".to_string())??
            .ok_or("rank 0 closed before sending the table of ranks")?;
        let table: Vec<String> =
            postcard::from_bytes(&table).map_err(|e| format!("a garbled table of ranks ({e})"))?;
        if table.len() != cfg.size {
            return Err(format!(
                "a table of {} ranks in a job of {}",
                table.len(),
                cfg.size
            ));
        }
        peers.push(Peer {
            rank: 0,
            conn,
            send,
            recv,
            addr: cfg.coordinator,
        });
        for (j, a) in table.iter().enumerate().take(cfg.rank).skip(1) {
            let to: SocketAddr = a.parse().map_err(|_| format!("rank {j}'s address {a:?}"))?;
            let (conn, send, recv) = dial(ep, cfg, to, local, deadline).await?;
            peers.push(Peer {
                rank: j,
                conn,
                send,
                recv,
                addr: to,
            });
        }
        while peers.len() < cfg.size - 1 {
            let (p, _) = tokio::time::timeout_at(deadline, accept(ep, cfg))
                .await
                .map_err(|_| "the ranks above this one did not connect in time".to_string())??;
            if p.rank <= cfg.rank || peers.iter().any(|q| q.rank == p.rank) {
                return Err(format!("an unexpected connection from rank {}", p.rank));
            }
            peers.push(p);
        }
    }
    Ok(peers)
}
