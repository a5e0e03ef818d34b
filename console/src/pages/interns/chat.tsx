import { type FormEvent, useEffect, useRef, useState } from 'react';
import { ApiError, call, dataApi } from '../../api/client';
import { ErrorBanner } from '../../components/error-banner';
import { SelectField } from '../../components/field';
import { type ChatChunk, readChunks } from './sse';

interface Turn {
  id: number;
  role: 'user' | 'intern' | 'answer';
  text: string;
  /** The intern's steps (each tool it runs is a line). */
  reasoning: string;
  error?: string;
}

/** A `gateway.provide_input` pause: a permission to give or a question to answer. */
interface Pause {
  id: string;
  kind: 'permission' | 'elicitation';
  operation?: string;
  options: string[];
  message?: string;
}

const OPTION_TEXT: Record<string, string> = {
  allow_once: 'Allow once',
  allow_always: 'Allow always',
  reject: 'Reject',
};

function pauseOf(call: { id?: string; function?: { name?: string; arguments?: string } }): Pause | null {
  if (!call.id || !call.function?.name?.endsWith('provide_input')) return null;
  let args: Record<string, unknown> = {};
  try {
    args = JSON.parse(call.function.arguments ?? '{}') as Record<string, unknown>;
  } catch {
    // A pause we cannot read is still answerable as a question.
  }
  return {
    id: call.id,
    kind: args.kind === 'permission' ? 'permission' : 'elicitation',
    operation: typeof args.operation === 'string' ? args.operation : undefined,
    options: Array.isArray(args.options)
      ? args.options.filter((o): o is string => typeof o === 'string')
      : [],
    message: typeof args.message === 'string' ? args.message : undefined,
  };
}

const APPROVAL = [
  { value: 'self-drive', label: 'Runs tools on its own' },
  { value: 'manual', label: 'Asks before each tool' },
];

/**
 * A chat with one running intern: the replies stream in; when the intern pauses to ask a question
 * or for permission (a `gateway.provide_input` tool call) the question is shown with a way to answer
 * it, and the answer continues the same session.
 */
export function InternChat({ internId, name }: { internId: string; name: string }) {
  const [turns, setTurns] = useState<Turn[]>([]);
  const [sessionId, setSessionId] = useState<string | null>(null);
  const [pause, setPause] = useState<Pause | null>(null);
  const [draft, setDraft] = useState('');
  const [answer, setAnswer] = useState('');
  const [approval, setApproval] = useState('self-drive');
  const [streaming, setStreaming] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const abort = useRef<AbortController | null>(null);
  const nextId = useRef(0);
  const answerBox = useRef<HTMLInputElement | HTMLButtonElement | null>(null);

  // A pause takes the keyboard to its answer; leaving the chat cancels a streaming run.
  // (The prompt shows once the stream has ended, so focus waits for both.)
  useEffect(() => {
    if (pause && !streaming) answerBox.current?.focus();
  }, [pause, streaming]);
  useEffect(() => () => abort.current?.abort(), []);

  const update = (id: number, f: (t: Turn) => Turn) =>
    setTurns((ts) => ts.map((t) => (t.id === id ? f(t) : t)));

  const onChunk = (turnId: number) => (c: ChatChunk) => {
    if (c.session_id) setSessionId(c.session_id);
    if (c.error) {
      const message = c.error.message;
      update(turnId, (t) => ({ ...t, error: message }));
    }
    for (const choice of c.choices) {
      const d = choice.delta;
      if (d.content || d.reasoning)
        update(turnId, (t) => ({
          ...t,
          text: t.text + (d.content ?? ''),
          reasoning: t.reasoning + (d.reasoning ?? ''),
        }));
      for (const tc of d.tool_calls ?? []) {
        const p = pauseOf(tc);
        if (p) setPause(p);
      }
    }
  };

  /** Sends the chat's last message (a user message or the answer to a pause) and streams the reply. */
  async function send(
    message: { role: 'user'; content: string } | { role: 'tool'; tool_call_id: string; content: string },
    shown: Turn,
  ) {
    setError(null);
    setPause(null);
    const turnId = ++nextId.current;
    setTurns((ts) => [...ts, shown, { id: turnId, role: 'intern', text: '', reasoning: '' }]);
    const controller = new AbortController();
    abort.current = controller;
    setStreaming(true);
    try {
      const body = await call(
        dataApi.POST('/interns/{internId}/chat/completions', {
          params: { path: { internId } },
          body: {
            stream: true,
            messages: [message],
            ...(sessionId ? { session_id: sessionId } : {}),
            approval_mode: approval as 'manual' | 'self-drive',
          },
          parseAs: 'stream',
          signal: controller.signal,
        }),
      );
      await readChunks(body as unknown as ReadableStream<Uint8Array>, onChunk(turnId));
    } catch (err) {
      if (controller.signal.aborted)
        update(turnId, (t) => ({ ...t, error: 'Stopped: the run was cancelled.' }));
      else {
        // Nothing streamed: drop the empty reply and say why above the chat.
        setTurns((ts) => ts.filter((t) => t.id !== turnId || t.text !== '' || t.reasoning !== ''));
        setError(err instanceof ApiError || err instanceof Error ? err : new Error(String(err)));
      }
    } finally {
      abort.current = null;
      setStreaming(false);
    }
  }

  const submitMessage = (e: FormEvent) => {
    e.preventDefault();
    const content = draft.trim();
    if (!content) return;
    setDraft('');
    void send(
      { role: 'user', content },
      { id: ++nextId.current, role: 'user', text: content, reasoning: '' },
    );
  };
  const answerWith = (content: string, shown: string) => {
    if (!pause) return;
    setAnswer('');
    void send(
      { role: 'tool', tool_call_id: pause.id, content },
      { id: ++nextId.current, role: 'answer', text: shown, reasoning: '' },
    );
  };

  return (
    <section className="chat" aria-labelledby="chat-title">
      <h2 id="chat-title">Chat with {name}</h2>
      <ErrorBanner error={error} onDismiss={() => setError(null)} />
      <div className="transcript" role="log" aria-label={`Conversation with ${name}`} aria-live="polite">
        {turns.length === 0 && <p className="hint">No messages yet. Say what the intern should do.</p>}
        {turns
          .filter((t) => streaming || t.role !== 'intern' || t.text || t.reasoning || t.error)
          .map((t) => (
            <div key={t.id} className={`turn turn-${t.role}`}>
              <span className="who">
                {t.role === 'intern' ? name : t.role === 'answer' ? 'Your answer' : 'You'}
              </span>
              {t.reasoning && <pre className="steps">{t.reasoning}</pre>}
              {t.text && <p className="text">{t.text}</p>}
              {t.role === 'intern' && !t.text && !t.reasoning && !t.error && streaming && (
                <p className="hint">…</p>
              )}
              {t.error && (
                <p className="turn-error" role="alert">
                  {t.error}
                </p>
              )}
            </div>
          ))}
      </div>
      {pause && !streaming && (
        <PauseForm
          pause={pause}
          answer={answer}
          setAnswer={setAnswer}
          onAnswer={answerWith}
          focus={answerBox}
        />
      )}
      <form className="chat-input" onSubmit={submitMessage}>
        <div className="field grow">
          <label htmlFor="chat-message">Message</label>
          <textarea
            id="chat-message"
            name="message"
            rows={3}
            value={draft}
            onChange={(e) => setDraft(e.target.value)}
            onKeyDown={(e) => {
              // Enter sends, Shift+Enter starts a new line.
              if (e.key === 'Enter' && !e.shiftKey) {
                e.preventDefault();
                e.currentTarget.form?.requestSubmit();
              }
            }}
          />
        </div>
        <SelectField
          label="Tools"
          name="approval_mode"
          value={approval}
          onChange={setApproval}
          options={APPROVAL}
        />
        <span className="actions">
          <button type="submit" disabled={streaming || draft.trim() === ''}>
            Send
          </button>
          {streaming && (
            <button type="button" className="danger" onClick={() => abort.current?.abort()}>
              Stop
            </button>
          )}
        </span>
      </form>
      {sessionId && (
        <p className="hint">
          Session <code>{sessionId}</code>{' '}
          <button
            type="button"
            className="link"
            disabled={streaming}
            onClick={() => {
              setSessionId(null);
              setPause(null);
              setTurns([]);
            }}
          >
            New conversation
          </button>
        </p>
      )}
    </section>
  );
}

function PauseForm(props: {
  pause: Pause;
  answer: string;
  setAnswer: (s: string) => void;
  onAnswer: (content: string, shown: string) => void;
  focus: React.RefObject<HTMLInputElement | HTMLButtonElement | null>;
}) {
  const { pause } = props;
  if (pause.kind === 'permission') {
    const options = pause.options.length ? pause.options : ['allow_once', 'reject'];
    return (
      <section className="pause" aria-labelledby="pause-title">
        <h3 id="pause-title">The intern asks permission</h3>
        <p>
          It wants to run <code>{pause.operation ?? 'a tool'}</code>.
        </p>
        <span className="actions">
          {options.map((o, i) => (
            <button
              key={o}
              type="button"
              className={o === 'reject' ? 'danger' : undefined}
              ref={i === 0 ? (props.focus as React.RefObject<HTMLButtonElement>) : undefined}
              onClick={() => props.onAnswer(o, OPTION_TEXT[o] ?? o)}
            >
              {OPTION_TEXT[o] ?? o}
            </button>
          ))}
        </span>
      </section>
    );
  }
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const text = props.answer.trim();
    if (text) props.onAnswer(text, text);
  };
  return (
    <section className="pause" aria-labelledby="pause-title">
      <h3 id="pause-title">The intern asks</h3>
      <form className="form-row" onSubmit={submit}>
        <div className="field grow">
          <label htmlFor="pause-answer">{pause.message ?? 'Your answer'}</label>
          <input
            id="pause-answer"
            name="answer"
            autoComplete="off"
            ref={props.focus as React.RefObject<HTMLInputElement>}
            value={props.answer}
            onChange={(e) => props.setAnswer(e.target.value)}
            required
          />
        </div>
        <button type="submit" disabled={props.answer.trim() === ''}>
          Answer
        </button>
      </form>
    </section>
  );
}
