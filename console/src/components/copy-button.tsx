import { useState } from 'react';

/** Copies `text` to the clipboard and says so (or says it could not, e.g. on plain HTTP). */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <span className="copy">
      <button
        type="button"
        onClick={() =>
          navigator.clipboard.writeText(text).then(
            () => setState('copied'),
            () => setState('failed'),
          )
        }
      >
        {label}
      </button>
      <span role="status" className="hint">
        {state === 'copied'
          ? 'Copied'
          : state === 'failed'
            ? 'Could not copy: select and copy it by hand'
            : ''}
      </span>
    </span>
  );
}
