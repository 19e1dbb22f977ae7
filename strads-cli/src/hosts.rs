//! Where the ranks of `strads run --hosts/--hostfile` run: a list of hosts, each with a
//! number of slots (1 unless a hostfile says `slots=K`); rank `r` takes slot `r` of the
//! list of slots, host by host, wrapping around when there are more ranks than slots.

use std::path::Path;

/// A host and how many ranks it takes before the next host's turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Host {
    pub(crate) name: String,
    pub(crate) slots: usize,
}

/// Checks a host name: what ssh and the network accept (no spaces, quotes or options).
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._:[]@%".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a host name (letters, digits, `-._:[]@%`, not starting with `-`)"
        ))
    }
}

/// The address the other ranks reach `host` at: its name without a `user@` ssh logs in
/// with, an IPv6 address in brackets, with `port`.
pub(crate) fn coordinator(host: &str, port: u16) -> String {
    let address = host.rsplit_once('@').map_or(host, |(_, a)| a);
    if address.contains(':') && !address.starts_with('[') {
        format!("[{address}]:{port}")
    } else {
        format!("{address}:{port}")
    }
}

/// `--hosts a,b,c`.
pub(crate) fn from_list(names: &[String]) -> Result<Vec<Host>, String> {
    names
        .iter()
        .map(|n| {
            let name = n.trim();
            check_name(name).map_err(|e| format!("--hosts: {e}"))?;
            Ok(Host {
                name: name.to_string(),
                slots: 1,
            })
        })
        .collect()
}

/// A hostfile: one host per line, optionally `slots=K` after it (1 to 4096); `#` starts a
/// comment; blank lines are skipped.
pub(crate) fn from_file(path: &Path) -> Result<Vec<Host>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the hostfile {}: {e}", path.display()))?;
    let mut hosts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = || format!("{}:{}", path.display(), i + 1);
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let name = words.next().unwrap_or("");
        check_name(name).map_err(|e| format!("{}: {e}", at()))?;
        let mut slots = 1;
        for w in words {
            slots = w
                .strip_prefix("slots=")
                .and_then(|k| k.parse::<usize>().ok())
                .filter(|k| (1..=4096).contains(k))
                .ok_or_else(|| {
                    format!(
                        "{}: `{w}` after the host name: expected `slots=K` with K from 1 to 4096",
                        at()
                    )
                })?;
        }
        hosts.push(Host {
            name: name.to_string(),
            slots,
        });
    }
    if hosts.is_empty() {
        return Err(format!("the hostfile {} names no host", path.display()));
    }
    Ok(hosts)
}

/// The host of each of `n` ranks.
pub(crate) fn place(hosts: &[Host], n: usize) -> Vec<&str> {
    let slots: Vec<&str> = hosts
        .iter()
        .flat_map(|h| std::iter::repeat_n(h.name.as_str(), h.slots))
        .collect();
    (0..n).map(|r| slots[r % slots.len()]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("strads-hosts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!(
            "{:x}",
            text.len() * 31 + text.bytes().map(u64::from).sum::<u64>() as usize
        ));
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn hostfiles_give_slots_and_ranks_fill_them_in_order() {
        let p = file("# the job's nodes\nnode01 slots=2\n\nnode02   # one slot\nnode03 slots=1\n");
        let hosts = from_file(&p).unwrap();
        assert_eq!(
            hosts,
            vec![
                Host {
                    name: "node01".into(),
                    slots: 2
                },
                Host {
                    name: "node02".into(),
                    slots: 1
                },
                Host {
                    name: "node03".into(),
                    slots: 1
                },
            ]
        );
        assert_eq!(
            place(&hosts, 6),
            ["node01", "node01", "node02", "node03", "node01", "node01"]
        );
        let list = from_list(&["a".into(), " b ".into()]).unwrap();
        assert_eq!(place(&list, 3), ["a", "b", "a"]);
    }

    #[test]
    fn bad_hostfiles_name_the_line() {
        let p = file("node01\nnode02 slots=0\n");
        let e = from_file(&p).unwrap_err();
        assert_eq!(
            e,
            format!(
                "{}:2: `slots=0` after the host name: expected `slots=K` with K from 1 to 4096",
                p.display()
            )
        );
        let p = file("node01\n-oProxyCommand=x\n");
        assert_eq!(
            from_file(&p).unwrap_err(),
            format!(
                "{}:2: `-oProxyCommand=x` is not a host name (letters, digits, `-._:[]@%`, not \
                 starting with `-`)",
                p.display()
            )
        );
        let p = file("# nothing\n\n");
        assert_eq!(
            from_file(&p).unwrap_err(),
            format!("the hostfile {} names no host", p.display())
        );
        assert!(
            from_list(&["a b".into()])
                .unwrap_err()
                .starts_with("--hosts: `a b`")
        );
    }

    /// `user@host` logs in as `user` but is reached at `host`; IPv6 addresses get brackets.
    #[test]
    fn the_coordinator_is_the_first_hosts_address() {
        assert_eq!(coordinator("node1", 7000), "node1:7000");
        assert_eq!(coordinator("alice@node1", 7000), "node1:7000");
        assert_eq!(coordinator("alice@10.0.0.5", 7000), "10.0.0.5:7000");
        assert_eq!(coordinator("fe80::1%eth0", 7000), "[fe80::1%eth0]:7000");
        assert_eq!(coordinator("bob@[::1]", 7000), "[::1]:7000");
    }
}
