import type { LiveMessage } from './live-messages.js';

type Listener = (message: LiveMessage) => void;

/** Fans live messages out to the subscribers of a project. */
export class LiveHub {
  private readonly listeners = new Map<string, Set<Listener>>();

  subscribe(projectId: string, listener: Listener): () => void {
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
    return (this.listeners.get(projectId)?.size ?? 0) > 0;
  }

  publish(projectId: string, message: LiveMessage): void {
    for (const listener of this.listeners.get(projectId) ?? []) listener(message);
  }
}
