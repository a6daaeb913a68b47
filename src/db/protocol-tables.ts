// What the A2A and MCP servers keep beside the tasks they create.
// Re-exported by database.ts, which holds the `Database` interface.

export interface A2aTaskContextsTable {
  task_uuid: string;
  agent_uuid: string;
  context_id: string;
}

export interface A2aHistoryIdsTable {
  task_uuid: string;
  position: number;
  message_id: string;
}

export interface A2aMessageIdsTable {
  agent_uuid: string;
  message_id: string;
  task_uuid: string;
  expires_at: string;
}

export interface McpTasksTable {
  task_uuid: string;
  workspace_uuid: string;
  agent_uuid: string;
  created_at: string;
}

export interface McpDeclinedQuestionsTable {
  task_uuid: string;
  position: number;
}
