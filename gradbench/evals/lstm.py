"""lstm: ADBench's LSTM (diagonal weight matrices) over a character sequence: the mean
log-likelihood loss of predicting each next character, and its gradient with respect to the
main and extra parameters. The numerics follow GradBench's C++ reference, which its validator
uses: the normalising log-sum-exp adds 2 to the sum of exponentials."""
import numpy as np
import s2sad

from gradbench.evals import Function, floats, primal

BACKENDS = ("python", "numba")


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm_model(weight, bias, hidden, cell, input):
    b = hidden.shape[0]
    forget = sigmoid(input * weight[:b] + bias[:b])
    ingate = sigmoid(hidden * weight[b:2 * b] + bias[b:2 * b])
    outgate = sigmoid(input * weight[2 * b:3 * b] + bias[2 * b:3 * b])
    change = np.tanh(hidden * weight[3 * b:] + bias[3 * b:])
    cell = cell * forget + ingate * change
    hidden = outgate * np.tanh(cell)
    return hidden, cell


def objective(main_params, extra_params, state, sequence):
    layers = main_params.shape[0] // 2
    hidden = [state[2 * i] for i in range(layers)]
    cell = [state[2 * i + 1] for i in range(layers)]
    total = 0.0
    for t in range(sequence.shape[0] - 1):
        x = sequence[t] * extra_params[0]
        for i in range(layers):
            # (s2sad refuses `hidden[i], cell[i] = ...`: one element assignment a line)
            x, c = lstm_model(main_params[2 * i], main_params[2 * i + 1], hidden[i], cell[i],
                              x)
            hidden[i] = x
            cell[i] = c
        predicted = x * extra_params[1] + extra_params[2]
        normalised = predicted - np.log(np.sum(np.exp(predicted)) + 2)
        total = total + np.sum(sequence[t + 1] * normalised)
    return -total / ((sequence.shape[0] - 1) * sequence.shape[1])


def _input(input):
    return tuple(np.array(input[name], dtype=float)
                 for name in ("main_params", "extra_params", "state", "sequence"))


def _jacobian(parts):
    main, extra = parts
    return floats(np.concatenate((main.ravel(), extra.ravel())))


def functions(backend):
    return {"objective": Function(_input, primal(objective, backend), float),
            "jacobian": Function(_input, s2sad.grad(objective, wrt=(0, 1), backend=backend),
                                 _jacobian)}
