//! Where a phase's CPU went: user and system time of the cluster's and lifeguard's
//! processes on this machine, read from `/proc/<pid>/stat` before and after the phase and
//! grouped by program. With the API server's requests per pod beside it, this shows what
//! bounds a phase: which process spent the cores, and how much of it per pod.

use std::collections::BTreeMap;
use std::time::Duration;

/// The programs tallied; any other process (this bench, the compiler, the shell) is not.
/// `kubemark` is the hollow kubelets, `kwok` the fake nodes' simulator; `containerd` and
/// `kubelet` the real nodes'.
const PROGRAMS: [&str; 10] = [
    "kube-apiserver",
    "etcd",
    "kube-scheduler",
    "kube-controller-manager",
    "kubemark",
    "kwok",
    "lifeguard-controller",
    "lifeguard-webhook",
    "kubelet",
    "containerd",
];

/// CPU time (user + system) per program, summed over its processes, in clock ticks, and
/// the whole machine's.
#[derive(Debug, Clone, Default)]
struct Snapshot {
    ticks: BTreeMap<&'static str, u64>,
    machine: Option<MachineTicks>,
}

/// The first line of `/proc/stat`, summed over every core, in clock ticks: the time the
/// cores were busy (any process, the bench and the kernel included) and the time the
/// hypervisor gave to other machines. Whether the machine had cores to spare is what tells
/// a bound by CPU from a bound by waiting.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct MachineTicks {
    busy: u64,
    stolen: u64,
}

/// A phase being measured: its start and the CPU times then.
pub struct Measure {
    started: std::time::Instant,
    before: Snapshot,
}

impl Measure {
    pub fn start() -> Self {
        Self {
            started: std::time::Instant::now(),
            before: snapshot(),
        }
    }

    /// The CPU seconds each program spent since `start`.
    pub fn seconds(&self) -> BTreeMap<&'static str, f64> {
        let (now, per_second) = (snapshot(), ticks_per_second());
        now.ticks
            .iter()
            .map(|(program, t)| {
                let was = self.before.ticks.get(program).copied().unwrap_or(0);
                (*program, t.saturating_sub(was) as f64 / per_second)
            })
            .collect()
    }

    /// What each program spent since `start`, per pod of `n`: milliseconds per pod and
    /// cores used, busiest first, then the total.
    pub fn report(&self, n: usize) -> String {
        let wall = self.started.elapsed();
        render(&self.before, &snapshot(), n, wall, ticks_per_second())
    }
}

/// Reads every process's CPU time now. A process that exits between the listing and the
/// read is skipped; one that exits during the phase drops its ticks (none of these should).
fn snapshot() -> Snapshot {
    let mut ticks = BTreeMap::new();
    let machine = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|stat| machine_ticks(&stat));
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Snapshot { ticks, machine };
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        let Some(program) = program_of(&entry.path()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some(used) = cpu_ticks(&stat) {
            *ticks.entry(program).or_insert(0) += used;
        }
    }
    Snapshot { ticks, machine }
}

/// Busy and stolen ticks from `/proc/stat`'s `cpu` line (user nice system idle iowait irq
/// softirq steal ...): busy is user + nice + system + irq + softirq; guest time is already
/// inside user.
fn machine_ticks(stat: &str) -> Option<MachineTicks> {
    let line = stat.lines().next()?;
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let values: Vec<u64> = fields
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let [user, nice, system, _idle, _iowait, irq, softirq, steal] = values.try_into().ok()?;
    Some(MachineTicks {
        busy: user + nice + system + irq + softirq,
        stolen: steal,
    })
}

fn program_of(proc_dir: &std::path::Path) -> Option<&'static str> {
    let cmdline = std::fs::read(proc_dir.join("cmdline")).ok()?;
    let first = cmdline.split(|b| *b == 0).next()?;
    let base = first.rsplit(|b| *b == b'/').next()?;
    PROGRAMS.into_iter().find(|p| p.as_bytes() == base)
}

/// utime + stime of one `/proc/<pid>/stat` line. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted from the last `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// The CPU each program spent between two snapshots, `per_second` ticks to a second:
/// milliseconds per pod and cores used over `wall`, busiest first, then the total.
fn render(
    before: &Snapshot,
    after: &Snapshot,
    n: usize,
    wall: Duration,
    per_second: f64,
) -> String {
    let mut spent: Vec<(&str, f64)> = after
        .ticks
        .iter()
        .map(|(program, t)| {
            let was = before.ticks.get(program).copied().unwrap_or(0);
            (*program, t.saturating_sub(was) as f64 / per_second)
        })
        .filter(|(_, seconds)| *seconds > 0.0)
        .collect();
    spent.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total: f64 = spent.iter().map(|(_, s)| s).sum();
    let wall = wall.as_secs_f64().max(f64::EPSILON);
    let mut parts: Vec<String> = spent
        .into_iter()
        .map(|(program, seconds)| {
            format!(
                "{program} {:.1} ms/pod ({:.2} cores)",
                seconds * 1000.0 / n as f64,
                seconds / wall
            )
        })
        .collect();
    parts.push(format!(
        "total {:.1} ms/pod ({:.2} cores over {wall:.1} s)",
        total * 1000.0 / n as f64,
        total / wall
    ));
    if let (Some(was), Some(now)) = (before.machine, after.machine) {
        let cores = |ticks: u64| ticks as f64 / per_second / wall;
        parts.push(format!(
            "the whole machine {:.2} cores busy of {}, {:.2} stolen",
            cores(now.busy.saturating_sub(was.busy)),
            std::thread::available_parallelism().map_or(0, |c| c.get()),
            cores(now.stolen.saturating_sub(was.stolen)),
        ));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_past_a_command_name_with_spaces_and_parentheses() {
        let stat =
            "4242 (kube (api) server) S 1 4242 4242 0 -1 4194560 1 0 0 0 250 75 0 0 20 0 9 0 1 2 3";
        assert_eq!(cpu_ticks(stat), Some(325));
        assert_eq!(cpu_ticks("4242 (truncated"), None);
        assert_eq!(cpu_ticks("4242 (x) S 1 2"), None);
    }

    #[test]
    fn the_report_counts_only_what_was_spent_between_the_snapshots() {
        let before = Snapshot {
            ticks: BTreeMap::from([("etcd", 100), ("kube-apiserver", 1_000)]),
            machine: Some(MachineTicks {
                busy: 5_000,
                stolen: 10,
            }),
        };
        let after = Snapshot {
            ticks: BTreeMap::from([("etcd", 100), ("kube-apiserver", 1_000 + 20 * 100)]),
            machine: Some(MachineTicks {
                busy: 5_000 + 19 * 100,
                stolen: 10 + 50,
            }),
        };
        let text = render(&before, &after, 1_000, Duration::from_secs(10), 100.0);
        assert!(
            text.starts_with("kube-apiserver 20.0 ms/pod (2.00 cores)"),
            "{text}"
        );
        assert!(
            !text.contains("etcd"),
            "nothing spent, nothing shown: {text}"
        );
        assert!(
            text.contains(", total 20.0 ms/pod (2.00 cores over 10.0 s), "),
            "{text}"
        );
        assert!(
            text.contains("the whole machine 1.90 cores busy of ")
                && text.ends_with(", 0.05 stolen"),
            "{text}"
        );
    }

    #[test]
    fn the_machine_line_is_read_from_proc_stat() {
        let stat =
            "cpu  4705 150 1120 16250 520 30 25 40 0 0\ncpu0 2000 75 560 8000 260 15 12 20 0 0\n";
        assert_eq!(
            machine_ticks(stat),
            Some(MachineTicks {
                busy: 4705 + 150 + 1120 + 30 + 25,
                stolen: 40
            })
        );
        assert_eq!(machine_ticks("cpu0 1 2 3 4 5 6 7 8\n"), None, "not the sum");
        assert_eq!(machine_ticks("cpu  1 2 3\n"), None, "too short");
        assert_eq!(machine_ticks(""), None);
    }
}
