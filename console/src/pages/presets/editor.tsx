import { useId } from 'react';
import { errorMessage } from '../../components/error-banner';
import { SelectField } from '../../components/field';
import { FORMATS, type Format } from './body';

/**
 * The JSON editor of a preset's request body, with its format. What is wrong with the body — its
 * JSON, or the gateway's refusal of it — is shown under the text and announced.
 */
export function BodyEditor(props: {
  format: Format;
  onFormat: (f: Format) => void;
  text: string;
  onText: (t: string) => void;
  error: unknown;
  placeholder?: string;
}) {
  const id = useId();
  const failed = props.error !== null && props.error !== undefined;
  return (
    <>
      <SelectField
        label="Request format"
        name="format"
        value={props.format}
        onChange={(v) => props.onFormat(v as Format)}
        options={FORMATS.map((f) => ({ value: f.value, label: f.label }))}
      />
      <div className="field field-wide">
        <label htmlFor={id}>Request body (JSON)</label>
        <textarea
          id={id}
          name="body"
          className="code"
          rows={12}
          spellCheck={false}
          value={props.text}
          placeholder={props.placeholder}
          onChange={(e) => props.onText(e.target.value)}
          aria-invalid={failed || undefined}
          aria-describedby={`${id}-hint${failed ? ` ${id}-error` : ''}`}
        />
        <small id={`${id}-hint`} className="hint">
          The body of an inference call in that format. The preset keeps its model, provider preferences,
          sampling settings, output limit, stop sequences and system prompt; messages, input and the rest are
          left out.
        </small>
        {failed && (
          <p id={`${id}-error`} className="field-error" role="alert">
            {errorMessage(props.error)}
          </p>
        )}
      </div>
    </>
  );
}
