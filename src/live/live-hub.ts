import type { LiveMessage } from './live-messages.js';

type Listener = (message: LiveMessage) => void;

/**
 * Fans live messages out to the subscribers of a project, and to those of every project (project
 * filtering off), whose messages carry the project's id as names are unique per project only.
 */
export class LiveHub {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly everyProject = new Set<Listener>();

  /** `projectId` null: every project's messages. */
  subscribe(projectId: string | null, listener: Listener): () => void {
    if (projectId === null) {
      this.everyProject.add(listener);
      return () => this.everyProject.delete(listener);
    }
    let set = this.listeners.get(projectId);
    if (!set) {
      set = new Set();
      this.listeners.set(projectId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      // Only this set: a second call must not drop a set made since for new subscribers.
      if (set.size === 0 && this.listeners.get(projectId) === set) this.listeners.delete(projectId);
    };
  }

  /** Whether anyone listens to the project, so that building a message can be skipped. */
  watched(projectId: string): boolean {
    return this.everyProject.size > 0 || (this.listeners.get(projectId)?.size ?? 0) > 0;
  }

  publish(projectId: string, message: LiveMessage): void {
    for (const listener of this.listeners.get(projectId) ?? []) listener(message);
    if (this.everyProject.size === 0 || message.type === 'hello') return;
    const tagged = { ...message, project_id: projectId };
    for (const listener of this.everyProject) listener(tagged);
  }
}
