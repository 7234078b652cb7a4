/**
 * The real coding agents as implementers (docs/guides/runner.md "Claude Code and Codex"): a task
 * graph whose subtasks are implemented by the real `claude` and `codex` binaries through the
 * runner's `claude-code` and `codex` adapters, each editing files in its own worktree and
 * committing; the runner verifies the commits and reports the evidence, the Scope Audit runs, and
 * integration and review complete. Failures are the contract's codes: an agent that exits non-zero
 * (its model refused), one that ends without committing, one past its `timeoutMs`, one whose
 * runner got SIGTERM; the last two end the agent and the command its tool was running, which
 * both CLIs start in a session of its own.
 *
 * Real: the agents, their tools, git, the runner (the `coord` CLI), the Coord server and Postgres.
 * Stand-in: the model only (test/helpers/model-servers.ts), answering a fixed script.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { anthropicModel, byTurn, openaiModel, type Script, type ScriptedModel } from '../helpers/model-servers.js';
import { runCoord, spawnCoord, tempHome } from '../cli/helpers.js';
import { checkoutFingerprint, git, until, userRepo } from '../runner/runner.helpers.js';
import { bash, docText } from '../helpers/process.js';
import { resolveImplementer } from '../../cli/runner/implementers.js';
import { agentEnv, agentVersions, configureCoordMcp, installCoord, subtaskOf } from './agents.helpers.js';

let t: TestApp;
let owner: Awaited<ReturnType<TestApp['session']>>;
let models: { anthropic: ScriptedModel; openai: ScriptedModel };
let env: NodeJS.ProcessEnv;
const pidDir = mkdtempSync(path.join(os.tmpdir(), 'coord-agent-pids-'));
const cleanups: string[] = [pidDir];

/**
 * What the scripted model answers an implementer, by the subtask its prompt names: `broken-*` is
 * refused by the API (the agent exits non-zero), `idle-*` ends without a change, `stuck-*` runs a
 * command that never ends (its pid in `pidDir`), and any other writes `src/<id>/impl.txt` with
 * the agent's file tool, commits it with its shell tool and says so.
 */
const implementer =
  (who: string): Script =>
  (req) => {
    const s = subtaskOf(req.text);
    if (!s) return { text: 'The prompt names no Coord subtask.' };
    const id = s.subtaskId;
    if (id.startsWith('broken')) return { error: { status: 400, message: 'scripted refusal' } };
    if (id.startsWith('idle')) return { text: 'I read the task and changed nothing.' };
    if (id.startsWith('reads'))
      return byTurn([
        { mcp: { server: 'coord', tool: 'todo_session_heartbeat', args: {} } },
        { mcp: { server: 'coord', tool: 'coordinate_agents_task_graph_status', args: { id: s.parentTaskId } } },
        { write: { path: `src/${id}/impl.txt`, content: `${id}, implemented by ${who}\n` } },
        { shell: `git add -A && git commit -qm "${id}: implementation by ${who}"` },
        { text: `Read the graph and committed ${id}.` },
      ])(req);
    if (id.startsWith('stuck'))
      return byTurn([
        { shell: `node -e "require('fs').writeFileSync('${pidDir}/${id}.pid', String(process.pid)); setInterval(() => {}, 1000)"` },
        { text: 'done' },
      ])(req);
    return byTurn([
      { write: { path: `src/${id}/impl.txt`, content: `${id}, implemented by ${who}\n` } },
      { shell: `git add -A && git commit -qm "${id}: implementation by ${who}"` },
      { text: `Committed ${id}.` },
    ])(req);
  };

/** The runner guide's `coord.agents.json` for the two agents (the README shows the same block). */
const GUIDE_AGENTS: Record<string, { adapter: string; timeoutMs?: number }> = JSON.parse(
  /## Claude Code and Codex as implementers\n[\s\S]*?```json\n([\s\S]*?)```/.exec(docText('docs/guides/runner.md'))?.[1] ?? 'null',
).agents;
const AGENTS = {
  ...GUIDE_AGENTS,
  'claude-limited': { adapter: 'claude-code', timeoutMs: 6000 },
  'codex-limited': { adapter: 'codex', timeoutMs: 6000 },
  'codex-unbounded': { adapter: 'codex', timeoutMs: 0 },
  // Ignores SIGTERM and leaves a command in a session of its own, as the agent CLIs' tools run.
  stubborn: {
    adapter: 'shell',
    command: `trap '' TERM; setsid node -e "require('fs').writeFileSync('${pidDir}/' + process.env.COORD_SUBTASK_ID + '.pid', String(process.pid)); setInterval(() => {}, 1000)" & sleep 300`,
    timeoutMs: 3000,
  },
  // The runner guide's addition for Claude Code to call Coord's tools.
  'claude-coord': {
    adapter: 'claude-code',
    ...JSON.parse(`{${/`("args": \["--allowedTools", "mcp__coord"\])`/.exec(docText('docs/guides/runner.md'))?.[1]}}`),
  },
};

beforeAll(async () => {
  t = await startTestApp();
  for (const id of ['planner', 'reviewer', ...Object.keys(AGENTS)]) await t.admin.post('/v1/agents', { id });
  owner = await t.session({ name: 'agents-owner' });
  models = { anthropic: await anthropicModel(implementer('claude')), openai: await openaiModel(implementer('codex')) };
  const home = tempHome();
  cleanups.push(home);
  env = agentEnv(home, models, { COORD_URL: t.base, COORD_TOKEN: owner.token });
  env.PATH = `${installCoord(home)}:${env.PATH}`;
  // Coord's tools for both agents over stdio (`coord mcp`), as the MCP guide configures them, on
  // a machine where the owner ran `coord login`: an implementer must still act as its dispatch.
  for (const agent of ['claude', 'codex'] as const) await configureCoordMcp(agent, 'stdio', t.base, { home, cwd: home, env });
  expect((await runCoord(['login', '--url', t.base, '--token', owner.token], { env })).code).toBe(0);
});
afterAll(async () => {
  await models?.anthropic.close();
  await models?.openai.close();
  for (const d of cleanups) rmSync(d, { recursive: true, force: true });
  await t?.close();
});

let seq = 0;
async function graphOf(subtasks: { id: string; implementer: string; dependsOn?: string[] }[], maxConcurrency = 2) {
  const repo = userRepo(AGENTS);
  cleanups.push(repo);
  const id = `task-agents-${++seq}`;
  const graph = {
    schemaVersion: 1,
    parentTask: { id, title: `Real agents ${seq}`, planner: 'planner', reviewer: 'reviewer' },
    subtasks: subtasks.map((s) => ({ ...s, spec: `Implement ${s.id}: write src/${s.id}/impl.txt and commit it.` })),
    maxConcurrency,
  };
  const intentMap = {
    schemaVersion: 1,
    parentTaskId: id,
    scopePolicy: 'strict',
    subtasks: subtasks.map((s) => ({ id: s.id, writeIntent: [`src/${s.id}/**`] })),
  };
  const r = await owner.client.post('/v1/graphs', { graph, intentMap });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { repo, id };
}
const coord = async (args: string[], cwd: string, token = owner.token) => {
  const r = await runCoord([...args, '--json'], { env: { ...env, COORD_TOKEN: token }, cwd });
  return { ...r, body: r.stdout ? JSON.parse(r.stdout) : undefined };
};
const subtasksOf = async (id: string) => (await owner.client.get(`/v1/graphs/${id}`)).body.graph.subtasks as any[];

/** Whether `pid` is a live process (a zombie is not). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
describe('Claude Code and Codex as implementers', () => {
  // api ─┬─ docs
  // cli ─┴─ tests
  const SUBTASKS = [
    { id: 'api', implementer: 'claude' },
    { id: 'cli', implementer: 'codex' },
    { id: 'docs', implementer: 'claude', dependsOn: ['api'] },
    { id: 'tests', implementer: 'codex', dependsOn: ['api', 'cli'] },
  ];
  let repo: string;
  let id: string;
  let fingerprint: string;

  beforeAll(async () => {
    ({ repo, id } = await graphOf(SUBTASKS));
    fingerprint = checkoutFingerprint(repo);
  });

  it('runs the graph to COMPLETED: each agent edits and commits in its own worktree', async () => {
    const r = await coord(['graph', 'advance', id, '--max-waves', '4', '--root', repo], repo);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.body.stop.code).toBe('COMPLETED');
    expect(r.body.waves.map((w: any) => w.selected)).toEqual([
      ['api', 'cli'],
      ['docs', 'tests'],
    ]);
    const outcomes = r.body.waves.flatMap((w: any) => w.outcomes);
    expect(outcomes.find((o: any) => o.subtaskId === 'api').agent).toMatchObject({
      id: 'claude',
      adapter: 'claude-code',
      commandSource: 'project',
      resolvedCommand: 'claude -p --permission-mode acceptEdits --allowedTools Bash',
    });
    expect(outcomes.find((o: any) => o.subtaskId === 'cli').agent).toMatchObject({
      adapter: 'codex',
      resolvedCommand: 'codex exec --sandbox danger-full-access -',
    });
    for (const s of await subtasksOf(id)) {
      const who = SUBTASKS.find((x) => x.id === s.subtaskId)!.implementer;
      expect(s.state).toBe('SUCCEEDED');
      expect(s.evidence).toMatchObject({ kind: 'IMPLEMENTATION_DONE', verified: true, committedChangeCount: 1 });
      expect(s.scopeEvidence).toMatchObject({ drift: false, actualPaths: [`src/${s.subtaskId}/impl.txt`] });
      const wt = path.join(repo, s.worktreePath);
      expect(readFileSync(path.join(wt, 'src', s.subtaskId, 'impl.txt'), 'utf8')).toBe(`${s.subtaskId}, implemented by ${who}\n`);
      expect(git(wt, 'log', '-1', '--format=%s')).toBe(`${s.subtaskId}: implementation by ${who}`);
      expect(git(wt, 'rev-parse', 'HEAD')).toBe(s.implementationCommit);
    }
    expect(checkoutFingerprint(repo)).toBe(fingerprint);
  });

  it('gave each agent its spec as the prompt, its tools, and its worktree as the working directory', async () => {
    for (const [model, vendorTools, subtasks] of [
      [models.anthropic, ['Bash', 'Write'], ['api', 'docs']],
      [models.openai, ['exec_command'], ['cli', 'tests']],
    ] as const) {
      for (const sid of subtasks) {
        const turns = model.agentTurns().filter((q) => subtaskOf(q.text)?.parentTaskId === id && subtaskOf(q.text)?.subtaskId === sid);
        expect(turns.map((q) => q.turn)).toEqual([0, 1, 2]);
        const first = turns[0];
        expect(first.text).toContain(`Implement ${sid}: write src/${sid}/impl.txt and commit it.`);
        expect(first.text).toContain(`Write only paths matching: src/${sid}/**.`);
        expect(first.text).toContain(path.join(repo, '.coord', 'worktrees', id, sid));
        expect(first.tools).toEqual(expect.arrayContaining([...vendorTools]));
        expect(first.body.stream).toBe(true);
        // The tool results came back: the commit ran in the worktree.
        expect(turns[2].toolResults).toHaveLength(2);
      }
    }
  });

  it('integrates the agents’ commits and the reviewer approves', async () => {
    const integrated = await coord(['graph', 'integrate', id, '--root', repo], repo);
    expect(integrated.code, integrated.stderr + integrated.stdout).toBe(0);
    expect(integrated.body.integration.status).toBe('SUCCEEDED');
    const subjects = git(repo, 'log', '--reverse', '--format=%s', `HEAD..coord/${id}/__integration__`).split('\n');
    expect(subjects).toEqual([
      'api: implementation by claude',
      'cli: implementation by codex',
      'docs: implementation by claude',
      'tests: implementation by codex',
    ]);
    const reviewer = await t.admin.post('/v1/sessions', { name: 'agents-reviewer', agentId: 'reviewer' });
    const reviewed = await coord(['graph', 'review', id, '--decision', 'REVIEW_APPROVED', '--root', repo], repo, reviewer.body.token);
    expect(reviewed.code, reviewed.stderr + reviewed.stdout).toBe(0);
    expect(reviewed.body.state).toBe('APPROVED');
    expect(checkoutFingerprint(repo)).toBe(fingerprint);
  });
});

describe('an implementer calling Coord over MCP', () => {
  it('acts as its dispatch (not as the owner logged in on the machine): reads its own graph, then commits', async () => {
    const { repo, id } = await graphOf([
      { id: 'reads-c', implementer: 'claude-coord' },
      { id: 'reads-x', implementer: 'codex' },
    ]);
    const r = await coord(['graph', 'run', id, '--root', repo], repo);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    for (const [model, sid] of [
      [models.anthropic, 'reads-c'],
      [models.openai, 'reads-x'],
    ] as const) {
      const turns = model.agentTurns().filter((q) => subtaskOf(q.text)?.parentTaskId === id && subtaskOf(q.text)?.subtaskId === sid);
      expect(turns.map((q) => q.turn)).toEqual([0, 1, 2, 3, 4]);
      // Who the implementer was: the heartbeat answers with the caller's session, its dispatch's.
      const session = r.body.outcomes.find((o: any) => o.subtaskId === sid).session.id;
      expect(turns[1].toolResults[0]).toMatch(new RegExp(`sessionId\\\\?"\\s*:\\s*\\\\?"${session}`));
      const status = turns[2].toolResults[1];
      expect(status).toContain(id);
      expect(status).not.toMatch(/isError|graph_not_found|unauthorized|forbidden/);
    }
    expect((await subtasksOf(id)).map((x) => x.state)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
  });
});

describe('an agent that fails is reported with the contract’s codes', () => {
  it('exits non-zero → AGENT_EXIT_NONZERO; ends without a commit → AGENT_RUNTIME_ERROR', async () => {
    const { repo, id } = await graphOf(
      [
        { id: 'broken-c', implementer: 'claude' },
        { id: 'broken-x', implementer: 'codex' },
        { id: 'idle-c', implementer: 'claude' },
        { id: 'idle-x', implementer: 'codex' },
      ],
      4,
    );
    const r = await coord(['graph', 'run', id, '--root', repo], repo);
    expect(r.code).toBe(1);
    const byId = Object.fromEntries(r.body.outcomes.map((o: any) => [o.subtaskId, o]));
    for (const sid of ['broken-c', 'broken-x']) {
      expect(byId[sid], sid).toMatchObject({ ok: false, state: 'FAILED', exitCode: 1, error: { code: 'AGENT_EXIT_NONZERO', stage: 'completion' } });
      // The agent's own account of the failure is in the attempt's log.
      expect(readFileSync(path.join(repo, byId[sid].log), 'utf8')).toContain('scripted refusal');
    }
    for (const sid of ['idle-c', 'idle-x']) {
      expect(byId[sid], sid).toMatchObject({ ok: false, state: 'FAILED', exitCode: 0, error: { code: 'AGENT_RUNTIME_ERROR', stage: 'completion' } });
      expect(byId[sid].error.message).toContain('without a new commit');
    }
    const stored = await subtasksOf(id);
    expect(stored.map((s) => [s.subtaskId, s.lastError.code])).toEqual([
      ['broken-c', 'AGENT_EXIT_NONZERO'],
      ['broken-x', 'AGENT_EXIT_NONZERO'],
      ['idle-c', 'AGENT_RUNTIME_ERROR'],
      ['idle-x', 'AGENT_RUNTIME_ERROR'],
    ]);
  });

  it('an agents file whose timeoutMs is not 1 ms to one day is refused before anything is claimed: INVALID_AGENT_CONFIG', async () => {
    const { repo, id } = await graphOf([{ id: 'never-launched', implementer: 'codex-unbounded' }]);
    const r = await coord(['graph', 'run', id, '--root', repo], repo);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr).error).toMatchObject({ code: 'INVALID_AGENT_CONFIG', stage: 'agent-resolution' });
    expect(JSON.parse(r.stderr).error.detail).toContain('timeoutMs must be an integer from 1 to 86400000');
    expect((await subtasksOf(id))[0]).toMatchObject({ state: 'READY', attempt: 0 });
    expect(models.openai.agentTurns().some((q) => subtaskOf(q.text)?.parentTaskId === id)).toBe(false);
  });

  it('past its timeoutMs the agent is ended with the command its tool ran → AGENT_TIMEOUT', async () => {
    const { repo, id } = await graphOf([
      { id: 'stuck-timeout-c', implementer: 'claude-limited' },
      { id: 'stuck-timeout-x', implementer: 'codex-limited' },
    ]);
    const r = await coord(['graph', 'run', id, '--root', repo], repo);
    expect(r.code).toBe(1);
    for (const o of r.body.outcomes) {
      expect(o, o.subtaskId).toMatchObject({ state: 'FAILED', error: { code: 'AGENT_TIMEOUT', stage: 'agent-launch' } });
      const pid = Number(readFileSync(path.join(pidDir, `${o.subtaskId}.pid`), 'utf8'));
      expect(alive(pid), `${o.subtaskId}'s command (pid ${pid})`).toBe(false);
    }
  });

  it('an implementer that ignores SIGTERM is killed, and with it a command it left in a session of its own', async () => {
    const { repo, id } = await graphOf([{ id: 'stuck-stubborn', implementer: 'stubborn' }]);
    const r = await coord(['graph', 'run', id, '--root', repo], repo);
    expect(r.body.outcomes[0]).toMatchObject({ state: 'FAILED', error: { code: 'AGENT_TIMEOUT' } });
    const pid = Number(readFileSync(path.join(pidDir, 'stuck-stubborn.pid'), 'utf8'));
    expect(alive(pid), `pid ${pid}`).toBe(false);
  });

  it('SIGTERM to the runner ends the agents and their tools’ commands → RUNNER_INTERRUPTED', async () => {
    const { repo, id } = await graphOf([
      { id: 'stuck-term-c', implementer: 'claude' },
      { id: 'stuck-term-x', implementer: 'codex' },
    ]);
    const runner = spawnCoord(['graph', 'run', id, '--root', repo, '--json'], { env });
    const pidFile = (sid: string) => path.join(pidDir, `${sid}.pid`);
    await until(() => existsSync(pidFile('stuck-term-c')) && existsSync(pidFile('stuck-term-x')));
    const pids = ['stuck-term-c', 'stuck-term-x'].map((sid) => Number(readFileSync(pidFile(sid), 'utf8')));
    expect(pids.every(alive)).toBe(true);
    runner.child.kill('SIGTERM');
    expect(await runner.exited).toBe(1);
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
    expect((await subtasksOf(id)).map((s) => s.lastError?.code)).toEqual(['RUNNER_INTERRUPTED', 'RUNNER_INTERRUPTED']);
  });
});

describe('the effective command', () => {
  it('is one shell line that reads back as the words launched', async () => {
    const plan = resolveImplementer(pidDir, 'any', { adapter: 'shell', command: `echo "it's" && echo $HOME` }, { PATH: process.env.PATH });
    expect(plan.effectiveCommand).toBe(`sh -c 'echo "it'\\''s" && echo $HOME'`);
    const words = await bash(`for w in ${plan.effectiveCommand}; do echo "<$w>"; done`, { cwd: pidDir });
    expect(words.stdout).toBe(['<sh>', '<-c>', `<echo "it's" && echo $HOME>`, ''].join('\n'));
  });
});

describe('the docs show what was tested', () => {
  it('the README’s agents file is the runner guide’s, and both name the versions installed here', () => {
    const readme = docText('README.md');
    const block = (text: string) => /```json\n(\{ "agents": \{\n {4}"claude"[\s\S]*?)```/.exec(text)?.[1];
    expect(block(readme)).toBeDefined();
    expect(block(readme)).toBe(block(docText('docs/guides/runner.md')));
    expect(Object.keys(GUIDE_AGENTS)).toEqual(['claude', 'codex']);
    const v = agentVersions();
    for (const doc of ['README.md', 'docs/guides/runner.md', 'docs/guides/mcp.md']) {
      const prose = docText(doc).replace(/\s+/g, ' ');
      expect(prose, doc).toContain(`Claude Code ${v.claude}`);
      expect(prose, doc).toContain(`Codex ${v.codex}`);
    }
  });
});
