import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { call, dataApi, type JsonBody } from '../../api/client';
import { ErrorBanner } from '../../components/error-banner';
import { Field } from '../../components/field';
import type { Intern } from './intern-actions';

type CreateBody = JsonBody<'/interns', 'post'>;
type UpdateBody = JsonBody<'/interns/{internId}', 'patch'>;

/** A labelled multi-line text field. */
function TextArea(props: {
  label: string;
  name: string;
  value: string;
  onChange: (v: string) => void;
  hint?: string;
}) {
  const id = useId();
  return (
    <div className="field grow">
      <label htmlFor={id}>{props.label}</label>
      <textarea
        id={id}
        name={props.name}
        rows={3}
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
        aria-describedby={props.hint ? `${id}-hint` : undefined}
      />
      {props.hint && (
        <small id={`${id}-hint`} className="hint">
          {props.hint}
        </small>
      )}
    </div>
  );
}

export function CreateIntern({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [instructions, setInstructions] = useState('');
  const [start, setStart] = useState(true);
  const create = useMutation({
    mutationFn: (body: CreateBody) => call(dataApi.POST('/interns', { body })),
    onSuccess: () => {
      setName('');
      setDescription('');
      setInstructions('');
      onCreated();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({
      name: name.trim(),
      description: description.trim() || null,
      instructions: instructions.trim() || null,
      provision: start,
    });
  };
  return (
    <section aria-labelledby="create-intern">
      <h2 id="create-intern">Create an intern</h2>
      <ErrorBanner error={create.error} onDismiss={() => create.reset()} />
      <form onSubmit={submit}>
        <div className="form-row">
          <Field
            label="Name"
            name="name"
            required
            value={name}
            onChange={(e) => setName(e.target.value)}
            hint="2–17 lowercase letters, digits and single hyphens, starting with a letter"
          />
          <Field
            label="Description"
            name="description"
            value={description}
            onChange={(e) => setDescription(e.target.value)}
          />
        </div>
        <TextArea
          label="Instructions"
          name="instructions"
          value={instructions}
          onChange={setInstructions}
          hint="Standing instructions the intern follows in every chat"
        />
        <div className="form-row">
          <div className="field check">
            <label>
              <input type="checkbox" checked={start} onChange={(e) => setStart(e.target.checked)} /> Start it
              now
            </label>
          </div>
          <button type="submit" disabled={create.isPending}>
            {create.isPending ? 'Creating…' : 'Create intern'}
          </button>
        </div>
      </form>
    </section>
  );
}

/** Edits an intern's description, instructions and model (a model change applies on the next start). */
export function EditIntern(props: { intern: Intern; onDone: () => void }) {
  const i = props.intern;
  const [description, setDescription] = useState(i.description ?? '');
  const [instructions, setInstructions] = useState(i.instructions ?? '');
  const [model, setModel] = useState(i.model ?? '');
  const save = useMutation({
    mutationFn: (body: UpdateBody) =>
      call(dataApi.PATCH('/interns/{internId}', { params: { path: { internId: i.id } }, body })),
    onSuccess: props.onDone,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate({
      description: description.trim() || null,
      instructions: instructions.trim() || null,
      model: model.trim() || null,
    });
  };
  return (
    <section aria-labelledby="edit-intern">
      <h2 id="edit-intern">Edit {i.name}</h2>
      <ErrorBanner error={save.error} onDismiss={() => save.reset()} />
      <form onSubmit={submit}>
        <div className="form-row">
          <Field label="Description" value={description} onChange={(e) => setDescription(e.target.value)} />
          <Field
            label="Model"
            value={model}
            onChange={(e) => setModel(e.target.value)}
            hint="author/slug; empty: the default. Applies the next time it starts"
          />
        </div>
        <TextArea label="Instructions" name="instructions" value={instructions} onChange={setInstructions} />
        <span className="actions">
          <button type="submit" disabled={save.isPending}>
            Save
          </button>
          <button type="button" onClick={props.onDone}>
            Cancel
          </button>
        </span>
      </form>
    </section>
  );
}
