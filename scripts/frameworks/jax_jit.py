"""A jitted JAX MLP training loop (no NVTX step ranges). The first call compiles with XLA."""
import argparse, statistics, time
import numpy as np
import jax, jax.numpy as jnp

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
a = p.parse_args()
key = jax.random.PRNGKey(0)
k1, k2, k3 = jax.random.split(key, 3)
params = {"w1": jax.random.normal(k1, (1024, 1024)) * 0.02, "w2": jax.random.normal(k2, (1024, 10)) * 0.02}
x_host = np.random.default_rng(0).standard_normal((256, 1024), dtype=np.float32)
y_host = np.random.default_rng(1).integers(0, 10, 256)

def loss_fn(params, x, y):
    h = jax.nn.relu(x @ params["w1"])
    logits = h @ params["w2"]
    return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(y.shape[0]), y])

@jax.jit
def step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), loss

times = []
for i in range(a.steps):
    t0 = time.perf_counter()
    x = jnp.asarray(x_host); y = jnp.asarray(y_host)
    params, loss = step(params, x, y)
    loss.block_until_ready()
    times.append(time.perf_counter() - t0)
print(f"jax_jit steps={a.steps} median_step_ms={statistics.median(times[a.steps // 4:]) * 1e3:.3f} first_step_ms={times[0] * 1e3:.3f}")
print("step_ms " + " ".join(f"{t * 1e3:.3f}" for t in times))  # the program's own time per step
