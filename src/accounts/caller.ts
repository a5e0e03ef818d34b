/** Who is calling: resolved from the bearer key on every authenticated request. */
export interface Caller {
  keyHash: string;
  organizationId: string;
  /** The key's workspace (for organization-acting keys, the workspace they were created in). */
  workspaceId: string;
  /** The key's creator; null when the key acts as the organization. */
  userId: string | null;
  isManagement: boolean;
}
