/**
 * Where the CPU goes during one claim run: CPU time per completed cycle, by process, from Linux's
 * /proc (other systems get null). On the benchmark's machine everything runs on the same cores,
 * so a contender's throughput is bounded by its total CPU per cycle and by how busy it keeps the
 * cores (utilisation); the two together say why one contender is faster than another.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { round } from './stats.js';

/** CPU time per completed cycle, µs, and how busy the machine's cores were, %. */
export interface CpuPerCycle {
  /** This process: the benchmark's clients (for graphile-worker: the runner and its task). */
  clientUs: number;
  /** The Coord server process(es) serving the run; 0 for contenders without one. */
  serverUs: number;
  /** Everything else on the machine: Postgres's backends, and any other load (see loadAverage). */
  postgresAndRestUs: number;
  totalUs: number;
  /** Busy share of all cores over the run's wall time, %. */
  busyPercent: number;
}

interface Snapshot {
  at: number;
  /** Machine-wide busy time, µs (user + nice + system + irq + softirq + steal, all cores). */
  machineUs: number;
  selfUs: number;
  serverUs: number;
}

const TICK_US = 1e6 / 100; // USER_HZ is 100 on Linux

function readMachineUs(): number | null {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return (f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] ?? 0)) * TICK_US;
  } catch {
    return null;
  }
}

function readProcessUs(pid: number): number {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_US; // utime + stime
}

/**
 * Starts measuring; `serverPids` are the Coord server processes to count apart. Call the returned
 * function when the run ends, with its completed cycles (null off Linux or without cycles).
 */
export function startCpu(serverPids: number[]): (cycles: number) => CpuPerCycle | null {
  const take = (): Snapshot | null => {
    const machineUs = readMachineUs();
    if (machineUs === null) return null;
    const u = process.cpuUsage();
    return { at: performance.now(), machineUs, selfUs: u.user + u.system, serverUs: serverPids.reduce((s, p) => s + readProcessUs(p), 0) };
  };
  const a = take();
  return (cycles) => {
    const b = take();
    if (!a || !b || cycles === 0) return null;
    const client = b.selfUs - a.selfUs;
    const server = b.serverUs - a.serverUs;
    const machine = b.machineUs - a.machineUs;
    return {
      clientUs: round(client / cycles, 0),
      serverUs: round(server / cycles, 0),
      postgresAndRestUs: round(Math.max(0, machine - client - server) / cycles, 0),
      totalUs: round(machine / cycles, 0),
      busyPercent: round((machine / ((b.at - a.at) * 1000 * os.cpus().length)) * 100, 0),
    };
  };
}
