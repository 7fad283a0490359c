module.exports.mentionsTopic = (output, context) =>
  output.toLowerCase().includes(context.vars.topic);
