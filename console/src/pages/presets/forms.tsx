import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { ApiError, dataApi } from '../../api/client';
import { Field } from '../../components/field';
import { bodyOf, type Format, parseBody, savePreset, type Version } from './body';
import { BodyEditor } from './editor';

const EXAMPLE = `{
  "model": "openai/gpt-4o-mini",
  "temperature": 0.2,
  "max_tokens": 300,
  "messages": [{ "role": "system", "content": "Classify the ticket in one word." }]
}`;

/** Creates a preset: its slug and the request body its first version is saved from. */
export function CreatePreset({ onCreated }: { onCreated: (slug: string) => void }) {
  const [slug, setSlug] = useState('');
  const [format, setFormat] = useState<Format>('chat/completions');
  const [text, setText] = useState('');
  const [created, setCreated] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: async (s: string) => {
      const body = parseBody(text);
      // Saving to a slug that exists adds a version to it: here, creating one, that is refused.
      const existing = await dataApi.GET('/presets/{slug}', { params: { path: { slug: s } } });
      if (existing.response.ok)
        throw new ApiError(409, `A preset “${s}” already exists: open it to save a new version.`);
      return savePreset(s, format, body);
    },
    onSuccess: (res) => {
      setCreated(res.data.slug);
      setSlug('');
      setText('');
      onCreated(res.data.slug);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setCreated(null);
    create.mutate(slug.trim());
  };
  return (
    <section aria-labelledby="create-preset">
      <h2 id="create-preset">Create a preset</h2>
      {created && (
        <div className="banner banner-ok" role="status">
          Preset “{created}” created.
        </div>
      )}
      <form onSubmit={submit}>
        <div className="form-row">
          <Field
            label="Slug"
            name="slug"
            required
            value={slug}
            onChange={(e) => setSlug(e.target.value)}
            hint="Letters, digits, '-', '_' and '.', up to 64; calls name it as @preset/<slug>"
          />
        </div>
        <BodyEditor
          format={format}
          onFormat={setFormat}
          text={text}
          onText={setText}
          error={create.error}
          placeholder={EXAMPLE}
        />
        <p className="actions">
          <button type="submit" disabled={create.isPending}>
            {create.isPending ? 'Creating…' : 'Create preset'}
          </button>
        </p>
      </form>
    </section>
  );
}

/**
 * Saves a new version of a preset, the editor starting from its current one. Remount it (its `key`)
 * when the current version changes, so the editor starts from the new one.
 */
export function SaveVersion({
  slug,
  current,
  onSaved,
}: {
  slug: string;
  current: Version | null;
  onSaved: (version: number | undefined) => void;
}) {
  const start = current ? bodyOf(current) : { format: 'chat/completions' as const, text: '' };
  const [format, setFormat] = useState<Format>(start.format);
  const [text, setText] = useState(start.text);
  const save = useMutation({
    mutationFn: async () => savePreset(slug, format, parseBody(text)),
    onSuccess: (res) => onSaved(res.data.designated_version?.version),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <form onSubmit={submit} aria-labelledby="save-version">
      <h3 id="save-version">Save a new version</h3>
      <BodyEditor format={format} onFormat={setFormat} text={text} onText={setText} error={save.error} />
      <p className="actions">
        <button type="submit" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : 'Save as new version'}
        </button>
      </p>
    </form>
  );
}
