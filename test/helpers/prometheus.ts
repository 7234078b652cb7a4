/**
 * A strict reader of the Prometheus text format (0.0.4) for tests: every line must be a `# HELP`,
 * a `# TYPE` or a sample of a family declared before it, or it throws naming the line.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  /** Family name → type (`counter`, `gauge`, `histogram`, `summary`, `untyped`). */
  types: Map<string, string>;
  samples: Sample[];
  /** The value of the one sample with this name whose labels include `labels`; undefined if none. */
  value(name: string, labels?: Record<string, string>): number | undefined;
  /** Every sample of `name` whose labels include `labels`. */
  all(name: string, labels?: Record<string, string>): Sample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(\\{(.*)\\})? (\\S+)( -?\\d+)?$`);
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;

function parseLabels(raw: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < raw.length) {
    const m = LABEL.exec(raw);
    if (!m) throw new Error(`bad labels in: ${line}`);
    labels[m[1]] = m[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

function familyOf(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (name.endsWith(suffix)) {
      const base = name.slice(0, -suffix.length);
      const t = types.get(base);
      if (t === 'histogram' || t === 'summary') return base;
    }
  }
  return undefined;
}

/** Parses an exposition; throws on the first line that is not valid text format. */
export function parsePrometheus(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) continue;
    const t = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
    if (t) {
      if (types.has(t[1])) throw new Error(`family declared twice: ${t[1]}`);
      types.set(t[1], t[2]);
      continue;
    }
    if (line.startsWith('#')) throw new Error(`unknown comment line: ${line}`);
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample: ${line}`);
    if (!familyOf(m[1], types)) throw new Error(`sample of an undeclared family: ${line}`);
    // Prometheus parses values with Go's ParseFloat: NaN and ±Inf in any case (prom-client prints "Nan").
    const v = m[4].toLowerCase();
    const value = v === 'nan' ? NaN : v === '+inf' || v === 'inf' ? Infinity : v === '-inf' ? -Infinity : Number(m[4]);
    if (Number.isNaN(value) && v !== 'nan') throw new Error(`bad value in: ${line}`);
    samples.push({ name: m[1], labels: m[3] ? parseLabels(m[3], line) : {}, value });
  }
  const matches = (s: Sample, name: string, labels: Record<string, string>) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v);
  return {
    types,
    samples,
    all: (name, labels = {}) => samples.filter((s) => matches(s, name, labels)),
    value(name, labels = {}) {
      const found = samples.filter((s) => matches(s, name, labels));
      if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
      return found[0]?.value;
    },
  };
}
