import type { InternView } from './model.js';
import type { InternRow } from './store.js';

/** The intern as the API shows it (digest §6.1): every key present, progress null once settled. */
export function internView(row: InternRow): InternView {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    instructions: row.instructions,
    model: row.model,
    status: row.status,
    last_failure_message: row.last_failure_message,
    progress:
      row.progress_step === null
        ? null
        : {
            step_label: row.progress_label ?? '',
            step_number: row.progress_step,
            total_steps: row.progress_total ?? row.progress_step,
          },
    hostname: row.hostname,
    workspace_id: row.workspace_id,
    vault_id: row.vault_id,
    attached_vault_id: row.attached_vault_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
