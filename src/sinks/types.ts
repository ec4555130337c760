export * from '../core/sink.js';
