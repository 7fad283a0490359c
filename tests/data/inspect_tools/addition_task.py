"""A tiny Inspect task for evalnb's tests: one tool, a mock model that calls it."""

from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool


@tool
def add():
    async def execute(x: int, y: int):
        """Add two numbers.

        Args:
            x: First number.
            y: Second number.
        """
        return x + y

    return execute


def respond(messages, tools, tool_choice, config):
    """Call add with the question's numbers, then answer with the tool's result."""
    last = messages[-1]
    if last.role == "tool":
        output = ModelOutput.from_content("mockllm/model", f"The sum is {last.text}.")
    else:
        words = messages[0].text.replace("?", " ").split()
        x, y = [int(word) for word in words if word.isdigit()]
        output = ModelOutput.for_tool_call("mockllm/model", "add", {"x": x, "y": y})
    # Usage given, so the mock model counts no tokens (that would fetch a tokenizer).
    output.usage = ModelUsage(input_tokens=20, output_tokens=8, total_tokens=28)
    return output


@task
def addition():
    return Task(
        dataset=[
            Sample(id="one-two", input="What is 1 + 2? Use the add tool.", target="3"),
            Sample(id="three-four", input="What is 3 + 4? Use the add tool.", target="8"),
        ],
        solver=[use_tools(add()), generate()],
        scorer=includes(),
    )


if __name__ == "__main__":
    eval(addition(), model=get_model("mockllm/model", custom_outputs=respond), log_dir="logs")
