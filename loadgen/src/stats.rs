//! What a run measured: HDR latency histograms per operation (each latency
//! counted from the request's intended start, so a stalled server is not
//! hidden by the generator waiting on it), counters, and CPU time.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

#[derive(Default)]
pub struct Recorder {
    histograms: Mutex<BTreeMap<String, Histogram<u64>>>,
    counters: Mutex<BTreeMap<String, u64>>,
}

/// One operation's numbers, latencies in milliseconds.
#[derive(Serialize, Clone, Debug)]
pub struct OpSummary {
    pub op: String,
    pub count: u64,
    pub per_second: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

fn new_histogram() -> Histogram<u64> {
    // Microseconds, up to ten minutes, three significant digits.
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds")
}

impl Recorder {
    /// Records the time from `intended` (when the request was due) to now.
    pub fn latency(&self, op: &str, intended: Instant) {
        self.record(op, intended.elapsed());
    }

    pub fn record(&self, op: &str, took: Duration) {
        let micros = (took.as_micros() as u64).clamp(1, 600_000_000);
        let mut h = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        h.entry(op.to_owned()).or_insert_with(new_histogram).saturating_record(micros);
    }

    pub fn count(&self, key: &str) {
        self.add(key, 1);
    }

    pub fn add(&self, key: &str, n: u64) {
        let mut c = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        *c.entry(key.to_owned()).or_insert(0) += n;
    }

    pub fn counter(&self, key: &str) -> u64 {
        self.counters.lock().unwrap_or_else(|p| p.into_inner()).get(key).copied().unwrap_or(0)
    }

    pub fn counters(&self) -> BTreeMap<String, u64> {
        self.counters.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Counters whose key starts with `prefix`, the prefix cut off.
    pub fn counters_with(&self, prefix: &str) -> BTreeMap<String, u64> {
        self.counters().into_iter().filter_map(|(k, v)| k.strip_prefix(prefix).map(|s| (s.to_owned(), v))).collect()
    }

    pub fn summaries(&self, elapsed: Duration) -> Vec<OpSummary> {
        let h = self.histograms.lock().unwrap_or_else(|p| p.into_inner());
        let secs = elapsed.as_secs_f64().max(1e-9);
        h.iter()
            .map(|(op, h)| {
                let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
                OpSummary {
                    op: op.clone(),
                    count: h.len(),
                    per_second: h.len() as f64 / secs,
                    p50_ms: ms(0.5),
                    p90_ms: ms(0.9),
                    p99_ms: ms(0.99),
                    p999_ms: ms(0.999),
                    max_ms: h.max() as f64 / 1000.0,
                }
            })
            .collect()
    }

    pub fn summary(&self, op: &str, elapsed: Duration) -> Option<OpSummary> {
        self.summaries(elapsed).into_iter().find(|s| s.op == op)
    }
}

/// CPU time of the server processes and of the whole machine, in ms.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct CpuSample {
    pub servers_ms: f64,
    pub machine_ms: f64,
}

/// Kernel clock ticks per second: 100 on every Linux this runs on.
const TICKS_PER_SECOND: f64 = 100.0;

fn process_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn machine_busy_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu = stat.lines().next()?;
    let v: Vec<u64> = cpu.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    Some(v.iter().enumerate().filter(|(i, _)| *i != 3 && *i != 4).take(7).map(|(_, x)| x).sum())
}

pub fn cpu_now(server_pids: &[u32]) -> CpuSample {
    let servers: u64 = server_pids.iter().filter_map(|&p| process_ticks(p)).sum();
    CpuSample {
        servers_ms: servers as f64 * 1000.0 / TICKS_PER_SECOND,
        machine_ms: machine_busy_ticks().unwrap_or(0) as f64 * 1000.0 / TICKS_PER_SECOND,
    }
}

impl CpuSample {
    pub fn since(self, before: CpuSample) -> CpuSample {
        CpuSample { servers_ms: self.servers_ms - before.servers_ms, machine_ms: self.machine_ms - before.machine_ms }
    }
}

/// A measured stretch of a scenario: its operations, CPU and requests sent.
#[derive(Serialize, Clone, Debug)]
pub struct Phase {
    pub name: String,
    pub seconds: f64,
    pub requests: u64,
    pub requests_per_second: f64,
    pub server_cpu_ms_per_request: f64,
    pub machine_cpu_ms_per_request: f64,
    pub ops: Vec<OpSummary>,
}

impl Phase {
    pub fn new(name: &str, recorder: &Recorder, elapsed: Duration, cpu: CpuSample) -> Phase {
        let requests = recorder.counter("requests");
        let per = |ms: f64| if requests > 0 { ms / requests as f64 } else { 0.0 };
        Phase {
            name: name.to_owned(),
            seconds: elapsed.as_secs_f64(),
            requests,
            requests_per_second: requests as f64 / elapsed.as_secs_f64().max(1e-9),
            server_cpu_ms_per_request: per(cpu.servers_ms),
            machine_cpu_ms_per_request: per(cpu.machine_ms),
            ops: recorder.summaries(elapsed),
        }
    }

    pub fn op(&self, op: &str) -> Option<&OpSummary> {
        self.ops.iter().find(|o| o.op == op)
    }
}

/// Markdown table of a phase's operations.
pub fn ops_table(phase: &Phase) -> String {
    let mut s =
        String::from("| operation | count | per s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for o in &phase.ops {
        s += &format!(
            "| {} | {} | {:.1} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |\n",
            o.op, o.count, o.per_second, o.p50_ms, o.p90_ms, o.p99_ms, o.p999_ms, o.max_ms
        );
    }
    s
}

/// Markdown table of phases: throughput and CPU per request.
pub fn phases_table(phases: &[Phase]) -> String {
    let mut s = String::from(
        "| phase | seconds | requests | requests/s | server CPU ms/request | machine CPU ms/request |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for p in phases {
        s += &format!(
            "| {} | {:.1} | {} | {:.1} | {:.3} | {:.3} |\n",
            p.name, p.seconds, p.requests, p.requests_per_second, p.server_cpu_ms_per_request, p.machine_cpu_ms_per_request
        );
    }
    s
}
