/**
 * The task link's transport: Node's IPC channel between a worker and a task process it forked,
 * with the frames of the WebSocket links (`{ type, id?, ...arguments }`, replies `{ type: 'reply',
 * re, ok, result | error }`) and the same checks: a frame of no known operation, or an event whose
 * arguments do not conform, is dropped and reported; requests go through the endpoint's dispatcher.
 */
import { MinimrError, serializeError } from '../../errors.js';
import type { Dispatcher } from './dispatch.js';
import {
  PROTOCOL_VERSION,
  argumentsOf,
  checkFrame,
  operationsOf,
  type OperationFrame,
  type ReplyFrame,
} from './frames.js';
import { TASK_TO_WORKER, WORKER_TO_TASK } from './task-protocol.js';
import { PendingReplies } from './pending-replies.js';
import type { Link } from './stubs.js';

/** A process-like end of an IPC channel: the `process` of a task, the ChildProcess of its worker. */
export interface IpcChannel {
  send?(message: unknown, sendHandle?: undefined, options?: object, callback?: (error: Error | null) => void): boolean;
  readonly connected: boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  off(event: 'message', listener: (message: unknown) => void): unknown;
}

const TASK_OPERATIONS = operationsOf(TASK_TO_WORKER, WORKER_TO_TASK);

export class IpcLink<P> implements Link {
  private readonly pending = new PendingReplies();
  private readonly listener = (message: unknown): void => this.onMessage(message);

  constructor(
    private readonly channel: IpcChannel,
    private readonly dispatcher: Dispatcher<P>,
    /** What the dispatcher is told the call came on. */
    private readonly peer: P,
    /** Where a frame that was dropped is reported. */
    private readonly refused: (err: MinimrError) => void,
  ) {
    channel.on('message', this.listener);
  }

  /** Stops listening; pending calls fail. */
  detach(): void {
    this.channel.off('message', this.listener);
    this.pending.failAll(new MinimrError('ECONNECT', 'the task link was closed before a reply arrived'));
  }

  call(type: string, args: object): Promise<unknown> {
    const { id, answer } = this.pending.open(type);
    void this.write({ v: PROTOCOL_VERSION, ...args, type, id });
    return answer;
  }

  tell(type: string, args: object): Promise<void> {
    return this.write({ v: PROTOCOL_VERSION, ...args, type });
  }

  private write(frame: object): Promise<void> {
    return new Promise((resolve) => {
      if (!this.channel.send || !this.channel.connected) return resolve();
      this.channel.send(frame, undefined, {}, () => resolve());
    });
  }

  private onMessage(message: unknown): void {
    let frame: OperationFrame | ReplyFrame;
    try {
      frame = checkFrame(message, TASK_OPERATIONS) as OperationFrame | ReplyFrame;
    } catch (err) {
      this.refused(err as MinimrError);
      return;
    }
    if (frame.type === 'reply') {
      this.pending.settle(frame as ReplyFrame);
      return;
    }
    const op = frame as OperationFrame;
    const answer = Promise.resolve().then(() => this.dispatcher.call(op.type, argumentsOf(op), this.peer));
    if (typeof op.id === 'number') {
      const re = op.id;
      answer.then(
        (result) => void this.write({ v: PROTOCOL_VERSION, type: 'reply', re, ok: true, result: result ?? null }),
        (err: unknown) =>
          void this.write({ v: PROTOCOL_VERSION, type: 'reply', re, ok: false, error: serializeError(err) }),
      );
    } else {
      answer.catch((err: unknown) =>
        this.refused(
          err instanceof MinimrError ? err : new MinimrError('EINTERNAL', String((err as Error)?.message ?? err)),
        ),
      );
    }
  }
}
