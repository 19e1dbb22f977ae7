//! Who this process is in a cluster job, and starting the others.
//!
//! [`detect`] reads the launch from `STRADS_*` settings ([`crate::config`]) and the
//! variables of the schedulers clusters have: Slurm (`SLURM_PROCID` and the step's
//! `SLURM_STEP_NUM_TASKS`, `SLURM_STEP_NODELIST`; a batch script's own process is no task
//! of a step), Open MPI (`OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE`) and
//! MPICH's PMI (`PMI_RANK`, `PMI_SIZE`). `STRADS_RANK`, `STRADS_SIZE` and
//! `STRADS_COORDINATOR` override them.
//!
//! The coordinator (where rank 0 listens) under Slurm is the first host of the step's node
//! list, on port `20000 + (SLURM_JOB_ID * 16 + SLURM_STEP_ID) mod 20000`, the same on
//! every rank. Under Open MPI or PMI with every rank on one node
//! (`OMPI_COMM_WORLD_LOCAL_SIZE` or `MPI_LOCALNRANKS` equal to the size) it is
//! `127.0.0.1` on a port derived the same way from the job id (`OMPI_MCA_ess_base_jobid`,
//! `PMI_ID`/`PMIX_NAMESPACE`, else the parent's process id); across nodes set
//! `STRADS_COORDINATOR=host:port`.

pub mod nodelist;
pub mod output;
#[cfg(feature = "cluster")]
pub mod secret;
pub mod spawn;

#[cfg(feature = "cluster")]
pub use secret::{JobSecret, SecretFile, read_secret};
pub use spawn::{RankCommand, Remote, Workers, spawn_rank};

/// Processes this one started (the driver of `STRADS_PROCESSES`): stopped on failure.
pub trait Children: Send {
    /// Kills every child still running and reaps it.
    fn kill_all(&mut self);
    /// Waits for the children to end by themselves (bounded); `false` if some did not.
    fn wait_all(&mut self, timeout: std::time::Duration) -> bool;
    /// A child that ended with failure, without waiting: its rank and how it ended.
    fn failed(&mut self) -> Option<(usize, String)> {
        None
    }
}

/// Which scheduler said who we are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Strads,
    Slurm,
    OpenMpi,
    Pmi,
}

/// A process's place in a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub rank: usize,
    pub size: usize,
    /// `host:port` of rank 0.
    pub coordinator: String,
    pub source: Source,
}

/// How this process runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Alone: the program as it is.
    Single,
    /// `STRADS_PROCESSES=N`: the driver, starting `N - 1` copies of itself.
    Spawner { processes: usize },
    /// One rank of a job started by a launcher or scheduler.
    Member(Layout),
}

/// A port in `20000..40000` from a job's identity, the same on every rank.
pub fn port_of(id: &str) -> u16 {
    let mut h: u32 = 2166136261;
    for b in id.bytes() {
        h = (h ^ b as u32).wrapping_mul(16777619);
    }
    20000 + (h % 20000) as u16
}

/// How this process runs, from the checked settings and `env` (other variables).
pub fn detect(
    cfg: &crate::config::Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Role, String> {
    let num = |name: &str| -> Result<Option<usize>, String> {
        match env(name).map(|v| v.trim().to_string()) {
            None => Ok(None),
            Some(v) if v.is_empty() => Ok(None),
            Some(v) => v
                .parse::<usize>()
                .map(Some)
                .map_err(|_| format!("{name}={v:?} is not a whole number")),
        }
    };
    // Slurm: the tasks of a job step (`srun`) carry the step's size; a batch script that
    // runs the program itself is task 0 of no step, however many tasks the job has.
    let slurm_tasks = match num("SLURM_NTASKS")? {
        Some(n) => Some(n),
        None => num("SLURM_NPROCS")?,
    };
    let slurm_step = num("SLURM_STEP_NUM_TASKS")?;
    let slurm_procid = num("SLURM_PROCID")?;
    // An MPI launcher inside a batch script names the ranks itself.
    let mpi = ["OMPI_COMM_WORLD_RANK", "PMI_RANK"]
        .iter()
        .any(|v| env(v).is_some_and(|x| !x.trim().is_empty()));
    if slurm_procid.is_some() && slurm_step.is_none() && cfg.rank.is_none() && !mpi {
        // Not a task of a step: the batch script's own process. It is one process unless
        // STRADS_PROCESSES starts the others here; a job of several tasks needs `srun`.
        return match (cfg.processes, slurm_tasks) {
            (Some(p), _) if p > 1 => Ok(Role::Spawner { processes: p }),
            (_, Some(n)) if n > 1 => Err(format!(
                "this process is task 0 of a Slurm job of {n} tasks (SLURM_NTASKS={n}) but \
                 no job step started it (SLURM_STEP_NUM_TASKS is unset, as in a batch \
                 script): start the program with `srun` so that every task runs, or set \
                 STRADS_PROCESSES={n} to start the ranks on this node"
            )),
            _ => Ok(Role::Single),
        };
    }
    let scheduler = if let (Some(r), Some(n)) = (slurm_procid, slurm_step) {
        let list = env("SLURM_STEP_NODELIST")
            .or_else(|| env("SLURM_JOB_NODELIST"))
            .unwrap_or_else(|| "localhost".into());
        let hosts = nodelist::expand(&list).map_err(|e| format!("SLURM_STEP_NODELIST: {e}"))?;
        let job = env("SLURM_JOB_ID").unwrap_or_default();
        let step = env("SLURM_STEP_ID").unwrap_or_default();
        let coord = format!("{}:{}", hosts[0], port_of(&format!("slurm/{job}/{step}")));
        Some((r, n, Some(coord), Source::Slurm))
    } else if let (Some(r), Some(n)) = (num("OMPI_COMM_WORLD_RANK")?, num("OMPI_COMM_WORLD_SIZE")?)
    {
        let one_node = num("OMPI_COMM_WORLD_LOCAL_SIZE")? == Some(n);
        let job = env("OMPI_MCA_ess_base_jobid")
            .or_else(|| env("PMIX_NAMESPACE"))
            .unwrap_or_else(|| std::os::unix::process::parent_id().to_string());
        let coord = one_node.then(|| format!("127.0.0.1:{}", port_of(&format!("ompi/{job}"))));
        Some((r, n, coord, Source::OpenMpi))
    } else if let (Some(r), Some(n)) = (num("PMI_RANK")?, num("PMI_SIZE")?) {
        let one_node = num("MPI_LOCALNRANKS")? == Some(n);
        let job = env("PMI_ID")
            .or_else(|| env("PMIX_NAMESPACE"))
            .unwrap_or_else(|| std::os::unix::process::parent_id().to_string());
        let coord = one_node.then(|| format!("127.0.0.1:{}", port_of(&format!("pmi/{job}"))));
        Some((r, n, coord, Source::Pmi))
    } else {
        None
    };
    let (rank, size, coordinator, source) = match (cfg.rank, scheduler) {
        (Some((r, n)), _) => (r, n, cfg.coordinator.clone(), Source::Strads),
        (None, Some((r, n, c, s))) => {
            if r >= n {
                return Err(format!("the scheduler gives rank {r} of {n} processes"));
            }
            (r, n, cfg.coordinator.clone().or(c), s)
        }
        (None, None) => {
            return Ok(match cfg.processes {
                Some(p) if p > 1 => Role::Spawner { processes: p },
                _ => Role::Single,
            });
        }
    };
    if size == 1 {
        // A job of one task: STRADS_PROCESSES may start the ranks here.
        return Ok(match cfg.processes {
            Some(p) if p > 1 => Role::Spawner { processes: p },
            _ => Role::Single,
        });
    }
    if cfg.processes.is_some_and(|p| p > 1) {
        return Err(format!(
            "STRADS_PROCESSES is set in a process that a launcher or scheduler started as \
             rank {rank} of a job of {size}; unset it"
        ));
    }
    let coordinator = coordinator.ok_or_else(|| {
        format!(
            "rank {rank} of {size} ({source:?}) spans several nodes: set \
             STRADS_COORDINATOR=host:port to where rank 0 can listen"
        )
    })?;
    Ok(Role::Member(Layout {
        rank,
        size,
        coordinator,
        source,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn role(strads: &[(&str, &str)], env: &[(&str, &str)]) -> Result<Role, String> {
        let cfg = Config::from_lookup(|n| {
            strads
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| (*v).into())
        })
        .map_err(|e| e.to_string())?;
        detect(&cfg, &|n| {
            env.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| (*v).to_string())
        })
    }

    #[test]
    fn alone_or_spawning() {
        assert_eq!(role(&[], &[]), Ok(Role::Single));
        assert_eq!(role(&[("STRADS_PROCESSES", "1")], &[]), Ok(Role::Single));
        assert_eq!(
            role(&[("STRADS_PROCESSES", "3")], &[]),
            Ok(Role::Spawner { processes: 3 })
        );
    }

    /// A Slurm batch script that runs the program itself is no task of a step: one
    /// process, or the spawner `STRADS_PROCESSES` asks for; a job of several tasks run that
    /// way is refused at once, saying to use `srun`. A step of one task may spawn too; a
    /// step of several may not.
    #[test]
    fn slurm_batch_scripts_and_one_task_steps() {
        let batch = [
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_JOB_ID", "7"),
        ];
        assert_eq!(
            role(&[], &batch).unwrap_err(),
            "this process is task 0 of a Slurm job of 2 tasks (SLURM_NTASKS=2) but no job \
             step started it (SLURM_STEP_NUM_TASKS is unset, as in a batch script): start \
             the program with `srun` so that every task runs, or set STRADS_PROCESSES=2 to \
             start the ranks on this node"
        );
        assert_eq!(
            role(&[("STRADS_PROCESSES", "2")], &batch),
            Ok(Role::Spawner { processes: 2 })
        );
        let one = [("SLURM_PROCID", "0"), ("SLURM_NTASKS", "1")];
        assert_eq!(role(&[], &one), Ok(Role::Single));
        let step_of_one = [
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_STEP_NUM_TASKS", "1"),
            ("SLURM_STEP_ID", "0"),
        ];
        // mpirun inside a batch script: Open MPI names the ranks.
        let mpi_in_batch = [
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
        ];
        let Ok(Role::Member(l)) = role(&[], &mpi_in_batch) else {
            panic!("mpirun in a batch script");
        };
        assert_eq!((l.rank, l.size, l.source), (3, 4, Source::OpenMpi));
        assert_eq!(
            role(&[("STRADS_PROCESSES", "3")], &step_of_one),
            Ok(Role::Spawner { processes: 3 })
        );
        assert_eq!(role(&[], &step_of_one), Ok(Role::Single));
        let step_of_two = [
            ("SLURM_PROCID", "1"),
            ("SLURM_STEP_NUM_TASKS", "2"),
            ("SLURM_STEP_NODELIST", "n1"),
        ];
        assert_eq!(
            role(&[("STRADS_PROCESSES", "3")], &step_of_two).unwrap_err(),
            "STRADS_PROCESSES is set in a process that a launcher or scheduler started as \
             rank 1 of a job of 2; unset it"
        );
    }

    #[test]
    fn schedulers_give_rank_size_and_coordinator() {
        let slurm = [
            ("SLURM_PROCID", "2"),
            ("SLURM_STEP_NUM_TASKS", "4"),
            ("SLURM_STEP_NODELIST", "node[07-08],gpu1"),
            ("SLURM_JOB_ID", "1234"),
            ("SLURM_STEP_ID", "0"),
        ];
        let Ok(Role::Member(l)) = role(&[], &slurm) else {
            panic!("slurm");
        };
        assert_eq!((l.rank, l.size, l.source), (2, 4, Source::Slurm));
        assert!(l.coordinator.starts_with("node07:"), "{}", l.coordinator);
        // Every rank of the step computes the same coordinator.
        let mut other = slurm;
        other[0] = ("SLURM_PROCID", "0");
        let Ok(Role::Member(l0)) = role(&[], &other) else {
            panic!("slurm");
        };
        assert_eq!(l0.coordinator, l.coordinator);
        let ompi = [
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ("OMPI_MCA_ess_base_jobid", "77"),
        ];
        let Ok(Role::Member(l)) = role(&[], &ompi) else {
            panic!("ompi");
        };
        assert_eq!((l.rank, l.size, l.source), (1, 2, Source::OpenMpi));
        assert!(l.coordinator.starts_with("127.0.0.1:"));
        // Across nodes the coordinator must be given.
        let e = role(
            &[],
            &ompi[..3]
                .iter()
                .map(|&(k, v)| {
                    if k == "OMPI_COMM_WORLD_LOCAL_SIZE" {
                        (k, "1")
                    } else {
                        (k, v)
                    }
                })
                .collect::<Vec<_>>(),
        )
        .unwrap_err();
        assert!(e.contains("set STRADS_COORDINATOR=host:port"), "{e}");
        let pmi = [
            ("PMI_RANK", "0"),
            ("PMI_SIZE", "3"),
            ("MPI_LOCALNRANKS", "3"),
        ];
        assert!(matches!(
            role(&[], &pmi),
            Ok(Role::Member(Layout {
                source: Source::Pmi,
                size: 3,
                ..
            }))
        ));
        // STRADS_* override.
        let Ok(Role::Member(l)) = role(
            &[
                ("STRADS_RANK", "0"),
                ("STRADS_SIZE", "2"),
                ("STRADS_COORDINATOR", "h:5000"),
            ],
            &slurm,
        ) else {
            panic!("override");
        };
        assert_eq!((l.rank, l.size, l.coordinator.as_str()), (0, 2, "h:5000"));
    }

    #[test]
    fn bad_scheduler_values_are_errors() {
        assert_eq!(
            role(&[], &[("SLURM_PROCID", "x"), ("SLURM_NTASKS", "2")]).unwrap_err(),
            "SLURM_PROCID=\"x\" is not a whole number"
        );
        assert!(
            role(&[], &[("PMI_RANK", "3"), ("PMI_SIZE", "2")])
                .unwrap_err()
                .contains("rank 3 of 2")
        );
        assert!(
            role(
                &[("STRADS_PROCESSES", "2")],
                &[
                    ("PMI_RANK", "0"),
                    ("PMI_SIZE", "2"),
                    ("MPI_LOCALNRANKS", "2")
                ]
            )
            .unwrap_err()
            .contains("unset it")
        );
    }
}
