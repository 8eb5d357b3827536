"""The attention debate replayed where the answer is known (docs/debate.md): each
paper's experiment as its paper defines it, as small functions over the pooling's
weights and readouts. No stage runs them yet."""
